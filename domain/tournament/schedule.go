package tournament

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/audit"
)

// Recurrences of a schedule.
const (
	Hourly = "hourly"
	Daily  = "daily"
	Weekly = "weekly"
)

// periods are the time between two occurrences of each recurrence.
var periods = map[string]time.Duration{Hourly: time.Hour, Daily: 24 * time.Hour, Weekly: 7 * 24 * time.Hour}

// CreateAhead is how long before its start an occurrence of a schedule is
// created: players see it in the list and may enter it from then on.
const CreateAhead = time.Hour

// Audit actions of schedules.
const (
	AuditScheduleCreate = "tournament.schedule"      // data: the schedule
	AuditScheduleStop   = "tournament.schedule.stop" // data: the schedule
)

// NewSchedule is what creating a recurring arena takes.
type NewSchedule struct {
	Name            string          `json:"name" minLength:"1" maxLength:"60"`
	GameType        string          `json:"gameType" enum:"connect4,rps"`
	Settings        json.RawMessage `json:"settings,omitempty" schema:"GameSettings" doc:"every occurrence's games' settings (the game type's defaults when absent)"`
	EntryFeeMinor   int64           `json:"entryFeeMinor" minimum:"0" maximum:"100000000" doc:"0 for free arenas, or 100000 to 100000000"`
	PrizeSplit      []int           `json:"prizeSplit,omitempty" minItems:"1" maxItems:"10" doc:"each place's share of the pool less the fee, in basis points (as prizeSplitBps); default [5000, 3000, 2000]"`
	DurationMinutes int             `json:"durationMinutes" minimum:"1" maximum:"180"`
	MaxPlayers      *int            `json:"maxPlayers,omitempty" minimum:"2"`
	Every           string          `json:"every" enum:"hourly,daily,weekly"`
	At              string          `json:"at" pattern:"^([01][0-9]|2[0-3]):[0-5][0-9]$" doc:"HH:MM in UTC: the start's time of day (hourly: only the minutes count); a weekly arena recurs on the weekday of its first start"`
	AgentsAllowed   *bool           `json:"agentsAllowed,omitempty" doc:"whether bot accounts may enter; default true"`
}

// Schedule is a recurring arena.
type Schedule struct {
	bun.BaseModel `bun:"table:tournament_schedules,alias:s"`

	ID              string          `bun:"id,pk,type:uuid" json:"id"`
	Name            string          `bun:"name" json:"name"`
	GameType        string          `bun:"game_type" json:"gameType" enum:"connect4,rps"`
	Settings        json.RawMessage `bun:"settings,type:jsonb" json:"settings" schema:"GameSettings"`
	EntryFeeMinor   int64           `bun:"entry_fee_minor" json:"entryFeeMinor"`
	PrizeSplit      []int           `bun:"prize_split_bps,array" json:"prizeSplit"`
	DurationMinutes int             `bun:"duration_minutes" json:"durationMinutes"`
	MaxPlayers      int             `bun:"max_players" json:"maxPlayers"`
	Every           string          `bun:"every" json:"every" enum:"hourly,daily,weekly"`
	At              string          `bun:"at" json:"at"`
	AgentsAllowed   bool            `bun:"agents_allowed" json:"agentsAllowed"`
	CreatedByID     string          `bun:"created_by,type:uuid" json:"createdBy"`
	CreatedAt       time.Time       `bun:"created_at" json:"createdAt"`
	NextAt          time.Time       `bun:"next_at" json:"nextAt" doc:"the start of the next occurrence not created yet (each is created an hour before it starts)"`
	StoppedAt       *time.Time      `bun:"stopped_at" json:"stoppedAt" doc:"when an admin stopped it; null while it recurs"`
}

var atPattern = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)

// FirstStart is the first start of a recurrence at "HH:MM" (UTC) after
// now: hourly at the next such minute, daily and weekly at the next such
// time of day.
func FirstStart(every, at string, now time.Time) (time.Time, bool) {
	m := atPattern.FindStringSubmatch(at)
	if m == nil || periods[every] == 0 {
		return time.Time{}, false
	}
	h, _ := strconv.Atoi(m[1])
	min, _ := strconv.Atoi(m[2])
	now = now.UTC()
	var t time.Time
	step := 24 * time.Hour
	if every == Hourly {
		t, step = time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), min, 0, 0, time.UTC), time.Hour
	} else {
		t = time.Date(now.Year(), now.Month(), now.Day(), h, min, 0, 0, time.UTC)
	}
	for !t.After(now) {
		t = t.Add(step)
	}
	return t, true
}

// Recurrence says when a schedule recurs, for people.
func Recurrence(every, at string) string {
	switch every {
	case Hourly:
		return "every hour at minute " + at[len(at)-2:]
	case Daily:
		return "every day at " + at + " UTC"
	}
	return "every week at " + at + " UTC"
}

// CreateSchedule has admin adminID create a recurring arena: its first
// occurrence is created CreateAhead before FirstStart. VALIDATION_ERROR
// names each invalid field.
func (s *Service) CreateSchedule(ctx context.Context, adminID string, n NewSchedule) (Schedule, error) {
	now := s.now()
	first, ok := FirstStart(n.Every, n.At, now)
	if !ok {
		first = now // every or at is named below
	}
	v, err := NewTournament{Name: n.Name, GameType: n.GameType, Settings: n.Settings, EntryFeeMinor: n.EntryFeeMinor,
		StartsAt: first.Format(time.RFC3339), DurationMinutes: n.DurationMinutes, MaxPlayers: n.MaxPlayers, PrizeSplitBps: n.PrizeSplit,
		AgentsAllowed: n.AgentsAllowed}.Validate(now, s.maxPlayers)
	fields := map[string]string{}
	var invalid *domain.Error
	if errors.As(err, &invalid) {
		for f, reason := range invalid.Fields {
			if f == "prizeSplitBps" {
				f = "prizeSplit"
			}
			fields[f] = reason
		}
	} else if err != nil {
		return Schedule{}, err
	}
	if periods[n.Every] == 0 {
		fields["every"] = "must be hourly, daily or weekly"
	}
	if !atPattern.MatchString(n.At) {
		fields["at"] = "must be a time of day HH:MM in UTC, such as 18:00"
	}
	if len(fields) > 0 {
		return Schedule{}, domain.Invalid(fields)
	}
	sc := Schedule{ID: uuid.NewString(), Name: v.name, GameType: v.gameType, Settings: v.settings, EntryFeeMinor: v.fee, PrizeSplit: v.split,
		DurationMinutes: n.DurationMinutes, MaxPlayers: v.maxPlayers, Every: n.Every, At: n.At, AgentsAllowed: v.agents,
		CreatedByID: adminID, CreatedAt: now, NextAt: first}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if _, err := tx.NewInsert().Model(&sc).Exec(ctx); err != nil {
			return fmt.Errorf("create a tournament schedule: %w", err)
		}
		return audit.Record(ctx, tx, audit.Entry{ActorID: adminID, Action: AuditScheduleCreate, Target: "schedule:" + sc.ID, Data: sc, At: now})
	})
	if err != nil {
		return Schedule{}, err
	}
	return sc, nil
}

// Schedules lists the schedules, the newest first.
func (s *Service) Schedules(ctx context.Context) ([]Schedule, error) {
	out := []Schedule{}
	if err := s.db.NewSelect().Model(&out).Order("created_at DESC").Limit(200).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list the tournament schedules: %w", err)
	}
	return out, nil
}

// StopSchedule stops a schedule: no occurrence is created after it (those
// created stay). Stopping it again answers it unchanged. NOT_FOUND when
// there is none.
func (s *Service) StopSchedule(ctx context.Context, adminID, id string) (Schedule, error) {
	var sc Schedule
	id, ok := domain.CanonicalID(id)
	if !ok {
		return sc, domain.Errorf(domain.CodeNotFound, "no such schedule")
	}
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		err := tx.NewSelect().Model(&sc).Where("id = ?", id).For("UPDATE").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.CodeNotFound, "no such schedule")
		}
		if err != nil || sc.StoppedAt != nil {
			return err
		}
		now := s.now()
		sc.StoppedAt = &now
		if _, err := tx.NewUpdate().Model(&sc).Column("stopped_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("stop schedule %s: %w", id, err)
		}
		return audit.Record(ctx, tx, audit.Entry{ActorID: adminID, Action: AuditScheduleStop, Target: "schedule:" + id, Data: sc, At: now})
	})
	return sc, err
}

// createDue creates the occurrences of the schedules that start within
// CreateAhead, each schedule in its own transaction that claims its row
// (FOR UPDATE SKIP LOCKED: instances never create one twice, and the
// unique start per schedule holds if they did). Occurrences whose start
// passed while nothing ran are skipped; a schedule that fails leaves the
// others to be created (the first error is returned).
func (s *Service) createDue(ctx context.Context) error {
	now := s.now()
	var ids []string
	if err := s.db.NewSelect().Model((*Schedule)(nil)).Column("id").
		Where("stopped_at IS NULL AND next_at <= ?", now.Add(CreateAhead)).Limit(100).Scan(ctx, &ids); err != nil {
		return fmt.Errorf("find the schedules due: %w", err)
	}
	var first error
	for _, id := range ids {
		err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
			var sc Schedule
			err := tx.NewSelect().Model(&sc).Where("id = ? AND stopped_at IS NULL AND next_at <= ?", id, now.Add(CreateAhead)).
				For("UPDATE SKIP LOCKED").Scan(ctx)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			for sc.NextAt.Before(now) {
				sc.NextAt = sc.NextAt.Add(periods[sc.Every])
			}
			for !sc.NextAt.After(now.Add(CreateAhead)) {
				starts := sc.NextAt
				t := Tournament{ID: uuid.NewString(), Name: sc.Name, GameType: sc.GameType, Settings: sc.Settings, EntryFeeMinor: sc.EntryFeeMinor,
					PrizeSplitBps: sc.PrizeSplit, StartsAt: starts, EndsAt: starts.Add(time.Duration(sc.DurationMinutes) * time.Minute),
					MaxPlayers: sc.MaxPlayers, AgentsAllowed: sc.AgentsAllowed, Status: StatusScheduled, CreatedByID: sc.CreatedByID,
					CreatedAt: now, ChangedAt: now, ScheduleID: &sc.ID}
				if err := insert(ctx, tx, t); err != nil {
					return fmt.Errorf("create the arena of schedule %s at %s: %w", sc.ID, starts, err)
				}
				sc.NextAt = sc.NextAt.Add(periods[sc.Every])
			}
			_, err = tx.NewUpdate().Model(&sc).Column("next_at").WherePK().Exec(ctx)
			return err
		})
		if err != nil && first == nil {
			first = fmt.Errorf("create the occurrences of schedule %s: %w", id, err) // and go on with the others
		}
	}
	return first
}
