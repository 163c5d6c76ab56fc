// Package flags stores feature flags in PostgreSQL and keeps an in-memory
// copy on every instance that is refreshed by NOTIFY, so a change made on one
// instance takes effect on all of them within milliseconds while reads on
// the request path never touch the database.
package flags

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/audit"
)

// Names of the flags the platform itself reads.
const (
	Maintenance   = "maintenance-mode"
	AbuseControls = "abuse-controls"
)

// Channel is the NOTIFY channel that announces a flag change.
const Channel = "feature_flags"

// Flag is one feature flag with its last change.
type Flag struct {
	bun.BaseModel `bun:"table:feature_flags"`

	Name        string    `bun:"name,pk" json:"name"`
	Enabled     bool      `bun:"enabled" json:"enabled"`
	Description string    `bun:"description" json:"description"`
	UpdatedAt   time.Time `bun:"updated_at" json:"updatedAt"`
	UpdatedBy   *string   `bun:"updated_by" json:"updatedBy"`
}

// Change is one entry of a flag's audit trail.
type Change struct {
	bun.BaseModel `bun:"table:feature_flag_changes"`

	ID        int64     `bun:"id,pk,autoincrement" json:"id,string" doc:"a sequence number as a string"`
	Name      string    `bun:"name" json:"name"`
	Enabled   bool      `bun:"enabled" json:"enabled"`
	ChangedBy string    `bun:"changed_by" json:"changedBy"`
	ChangedAt time.Time `bun:"changed_at" json:"changedAt"`
}

// Service reads and changes flags.
type Service struct {
	db    *bun.DB
	now   domain.Clock
	cache atomic.Pointer[map[string]bool]
}

// New returns a Service with an empty cache; call Load before serving.
func New(bdb *bun.DB, now domain.Clock) *Service {
	s := &Service{db: bdb, now: now}
	s.cache.Store(&map[string]bool{})
	return s
}

// Load replaces the in-memory copy with the database's flags.
func (s *Service) Load(ctx context.Context) error {
	var rows []Flag
	if err := s.db.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return fmt.Errorf("read the feature flags: %w", err)
	}
	m := make(map[string]bool, len(rows))
	for _, f := range rows {
		m[f.Name] = f.Enabled
	}
	s.cache.Store(&m)
	return nil
}

// Enabled reports the cached value of a flag; unknown flags are off.
func (s *Service) Enabled(name string) bool { return (*s.cache.Load())[name] }

// Snapshot returns a copy of every cached flag.
func (s *Service) Snapshot() map[string]bool {
	src := *s.cache.Load()
	m := make(map[string]bool, len(src))
	for k, v := range src {
		m[k] = v
	}
	return m
}

// List returns every flag with who changed it last, ordered by name.
func (s *Service) List(ctx context.Context) ([]Flag, error) {
	var rows []Flag
	if err := s.db.NewSelect().Model(&rows).Order("name").Scan(ctx); err != nil {
		return rows, fmt.Errorf("list the feature flags: %w", err)
	}
	return rows, nil
}

// Changes returns the newest changes first, at most limit of them: an
// empty list, never nil, when there are none.
func (s *Service) Changes(ctx context.Context, limit int) ([]Change, error) {
	rows := []Change{}
	if err := s.db.NewSelect().Model(&rows).Order("id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return rows, fmt.Errorf("read the last %d feature flag changes: %w", limit, err)
	}
	return rows, nil
}

// Set turns a flag on or off on behalf of actor, a label for code that
// acts for no signed-in user (tests), records the change in the flag's
// history and notifies every instance; an admin's change goes through
// SetByAdmin, which the audit log records. It returns NOT_FOUND for an
// unknown flag.
func (s *Service) Set(ctx context.Context, name string, enabled bool, actor string) (Flag, error) {
	return s.set(ctx, name, enabled, actor, "")
}

// SetByAdmin is Set for the signed-in admin userID: label (their username
// and wallet) is what the flag list shows as who changed it, and the
// change is recorded in the audit log (flag.set) in the same transaction.
// It returns NOT_FOUND, and records nothing, for an unknown flag.
func (s *Service) SetByAdmin(ctx context.Context, name string, enabled bool, userID, label string) (Flag, error) {
	return s.set(ctx, name, enabled, label, userID)
}

// flagSet is the data of a flag.set audit entry.
type flagSet struct {
	Enabled bool `json:"enabled"`
}

func (s *Service) set(ctx context.Context, name string, enabled bool, actor, adminID string) (Flag, error) {
	var f Flag
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		f = Flag{}
		err := tx.NewUpdate().Model(&f).
			Set("enabled = ?", enabled).Set("updated_at = ?", s.now()).Set("updated_by = ?", actor).
			Where("name = ?", name).Returning("*").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.CodeNotFound, "no feature flag named %q", name)
		}
		if err != nil {
			return fmt.Errorf("set feature flag %s to %t: %w", name, enabled, err)
		}
		change := Change{Name: name, Enabled: enabled, ChangedBy: actor, ChangedAt: f.UpdatedAt}
		if _, err := tx.NewInsert().Model(&change).Exec(ctx); err != nil {
			return fmt.Errorf("record the change of feature flag %s: %w", name, err)
		}
		if adminID != "" {
			if err := audit.Record(ctx, tx, audit.Entry{ActorID: adminID, Action: audit.FlagSet,
				Target: audit.FlagTarget(name), Data: flagSet{Enabled: enabled}, At: f.UpdatedAt}); err != nil {
				return err
			}
		}
		if err := db.Notify(ctx, tx, Channel, name); err != nil {
			return fmt.Errorf("announce the change of feature flag %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return Flag{}, err
	}
	// This instance need not wait for its own notification.
	return f, s.Load(ctx)
}
