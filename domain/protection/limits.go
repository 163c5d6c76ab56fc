package protection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"wager/db"
	"wager/domain"
)

// QueueLeaver takes a player out of the queues of staked lobbies, in the
// caller's transaction (the games). LockStakedQueues only locks those
// queue entries.
type QueueLeaver interface {
	LockStakedQueues(ctx context.Context, tx db.Tx, userID string) error
	LeaveStakedQueues(ctx context.Context, tx db.Tx, userID string) error
}

// BuyCanceller cancels a player's open market buy orders and releases
// what they lock, in the caller's transaction (the markets).
// LockBuyMarkets only locks the games whose markets hold them.
type BuyCanceller interface {
	LockBuyMarkets(ctx context.Context, tx db.Tx, userID string) error
	CancelBuysOf(ctx context.Context, tx db.Tx, userID string) error
}

// Service is the player's side of protection: their limits, exclusions,
// age confirmation and session.
type Service struct {
	*Rules
	queues QueueLeaver
	buys   BuyCanceller
}

// NewService returns the player's side over rules; queues and buys are
// what starting an exclusion ends.
func NewService(rules *Rules, queues QueueLeaver, buys BuyCanceller) *Service {
	return &Service{Rules: rules, queues: queues, buys: buys}
}

// Windows are a limit per rolling window (null: none).
type Windows struct {
	Day   *int64 `json:"day" minimum:"0" doc:"over the last 24 hours; null: no limit"`
	Week  *int64 `json:"week" minimum:"0" doc:"over the last 7 days; null: no limit"`
	Month *int64 `json:"month" minimum:"0" doc:"over the last 30 days; null: no limit"`
}

// Used is what is used of each window.
type Used struct {
	Day   int64 `json:"day"`
	Week  int64 `json:"week"`
	Month int64 `json:"month"`
}

// UsedLimits are what is used of the deposit and loss limits: deposits
// (confirmed, and prepared ones not expired) and net losses (0 when the
// window is a net win) over each window.
type UsedLimits struct {
	DepositMinor Used `json:"depositMinor"`
	LossMinor    Used `json:"lossMinor"`
}

// Limits are a player's limits in force, the looser changes waiting, and
// what is used.
type Limits struct {
	DepositMinor           Windows    `json:"depositMinor" doc:"the most you may deposit over each window"`
	LossMinor              Windows    `json:"lossMinor" doc:"the most your net loss over a window (stakes, entry fees, bets and market buys, less payouts, refunds, prizes, sales and redemptions) may reach: a stake, entry, bet or market buy that could take it past the limit, counting the whole amount it puts at risk, is refused"`
	StakeMaxMinor          *int64     `json:"stakeMaxMinor" minimum:"0" doc:"the largest stake or entry fee; null: none"`
	SessionReminderMinutes int        `json:"sessionReminderMinutes" minimum:"0" maximum:"1440" doc:"how often signed-in pages show how long you have played and won or lost; 0: never"`
	Pending                []Pending  `json:"pending" doc:"looser changes (a higher limit, or one removed) waiting 24 hours to apply"`
	Used                   UsedLimits `json:"used"`
}

// Limits returns the player's limits, what is used and what waits.
func (s *Service) Limits(ctx context.Context, userID string) (Limits, error) {
	now := s.now()
	st, err := s.state(ctx, s.db, userID, now, needs{all: true})
	if err != nil {
		return Limits{}, err
	}
	return limitsOf(st, now), nil
}

func limitsOf(st *state, now time.Time) Limits {
	l := st.limits(now)
	used := func(flows []flow, w time.Duration, floor bool) int64 {
		n := windowSum(flows, now, w)
		if floor && n < 0 {
			return 0
		}
		return n
	}
	return Limits{
		DepositMinor:           Windows{Day: l[DepositDay], Week: l[DepositWeek], Month: l[DepositMonth]},
		LossMinor:              Windows{Day: l[LossDay], Week: l[LossWeek], Month: l[LossMonth]},
		StakeMaxMinor:          l[StakeMax],
		SessionReminderMinutes: st.Reminder,
		Pending:                st.waiting(now),
		Used: UsedLimits{
			DepositMinor: Used{Day: used(st.deposits, Day, false), Week: used(st.deposits, Week, false), Month: used(st.deposits, Month, false)},
			LossMinor:    Used{Day: used(st.losses, Day, true), Week: used(st.losses, Week, true), Month: used(st.losses, Month, true)},
		},
	}
}

// LimitChange is one limit to set: Value nil removes it.
type LimitChange struct {
	Name  string
	Value *int64
}

// Changes are what a PUT of the limits asks for.
type Changes struct {
	Limits []LimitChange
	// Reminder is the new reality-check interval (nil: unchanged); a
	// null in the request sets the default.
	Reminder *int
}

// ParseChanges reads the body of PUT /users/me/limits: any subset of the
// limits (depositMinor and lossMinor as objects of day, week and month),
// each a whole number of minor units from 0 or null to remove it, and
// sessionReminderMinutes (0 to 1440; null for the default). It returns
// INVALID_JSON for a body that is not one JSON object and
// VALIDATION_ERROR naming every field that is unknown, negative, not a
// whole number or too large.
func ParseChanges(body []byte) (Changes, error) {
	var top map[string]json.RawMessage
	if err := decodeOne(body, &top); err != nil {
		return Changes{}, err
	}
	if top == nil {
		return Changes{}, domain.Errorf(domain.CodeInvalidJSON, "the body must be a JSON object of the limits to set")
	}
	var out Changes
	bad := domain.Validator{}
	for key, raw := range top {
		switch key {
		case "depositMinor", "lossMinor":
			var windows map[string]json.RawMessage
			if err := decodeOne(raw, &windows); err != nil || windows == nil {
				bad.Check(false, key, "must be an object of day, week and month limits")
				continue
			}
			for w, v := range windows {
				name := key + "." + w
				if w != "day" && w != "week" && w != "month" {
					bad.Check(false, name, "is not a limit: the windows are day, week and month")
					continue
				}
				value, reason := limitValue(v, MaxLimitMinor)
				bad.Check(reason == "", name, reason)
				out.Limits = append(out.Limits, LimitChange{Name: name, Value: value})
			}
		case "stakeMaxMinor":
			value, reason := limitValue(raw, MaxLimitMinor)
			bad.Check(reason == "", key, reason)
			out.Limits = append(out.Limits, LimitChange{Name: StakeMax, Value: value})
		case "sessionReminderMinutes":
			value, reason := limitValue(raw, MaxReminderMinutes)
			bad.Check(reason == "", key, strings.Replace(reason, "USDC minor units", "minutes", 1))
			minutes := DefaultReminderMinutes
			if value != nil {
				minutes = int(*value)
			}
			out.Reminder = &minutes
		default:
			bad.Check(false, key, "is not a limit: the fields are depositMinor, lossMinor, stakeMaxMinor and sessionReminderMinutes")
		}
	}
	if err := bad.Err(); err != nil {
		return Changes{}, err
	}
	return out, nil
}

// decodeOne decodes one JSON value, keeping numbers exact.
func decodeOne(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return domain.Errorf(domain.CodeInvalidJSON, "the body is not a JSON object of the limits to set")
	}
	if dec.More() {
		return domain.Errorf(domain.CodeInvalidJSON, "the body must hold a single JSON object")
	}
	return nil
}

// limitValue reads a limit: null (nil), or a whole number from 0 to max.
// The reason is empty when it is valid.
func limitValue(raw json.RawMessage, max int64) (*int64, string) {
	text := strings.TrimSpace(string(raw))
	if text == "null" {
		return nil, ""
	}
	reason := fmt.Sprintf("must be a whole number of USDC minor units from 0 to %d, or null to remove the limit", max)
	if text == "" || strings.ContainsAny(text, ".eE\"") {
		return nil, reason
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 || n > max {
		return nil, reason
	}
	return &n, ""
}

// tighter reports whether limit value v is tighter than the current c
// (nil is no limit): lower, or a limit where there was none.
func tighter(v, c *int64) bool {
	return v != nil && (c == nil || *v < *c)
}

func same(v, c *int64) bool {
	return (v == nil && c == nil) || (v != nil && c != nil && *v == *c)
}

// columns are the columns of the limits, by name.
var columns = map[string]string{
	DepositDay: "deposit_day_minor", DepositWeek: "deposit_week_minor", DepositMonth: "deposit_month_minor",
	LossDay: "loss_day_minor", LossWeek: "loss_week_minor", LossMonth: "loss_month_minor", StakeMax: "stake_max_minor",
}

// SetLimits applies changes to the player's limits: a tighter value
// (lower, or a limit where there was none) at once; a looser one (higher,
// or a removal) 24 hours after it is asked for, listed in pending until
// then (asking again starts the 24 hours again); the current value, or a
// tighter one, while a looser change waits replaces it. The reminder
// interval changes at once. It returns the limits as they stand.
func (s *Service) SetLimits(ctx context.Context, userID string, c Changes) (Limits, error) {
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if err := lockProtection(ctx, tx, userID, s.now()); err != nil {
			return err
		}
		now := s.now() // after the lock: a change follows what waited before it
		st, err := s.state(ctx, tx, userID, now, needs{})
		if err != nil {
			return err
		}
		// What matured is written down first: the comparisons are with
		// the limits in force.
		current := st.limits(now)
		set := map[string]*int64{}
		for _, p := range st.pending {
			if !now.Before(p.EffectiveAt) {
				set[p.Name] = p.Value
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM player_limit_changes WHERE user_id = ? AND effective_at <= ?", userID, now); err != nil {
			return fmt.Errorf("apply the matured limit changes of %s: %w", userID, err)
		}
		for _, ch := range c.Limits {
			if cur := current[ch.Name]; tighter(ch.Value, cur) || same(ch.Value, cur) {
				set[ch.Name] = ch.Value
				if _, err := tx.ExecContext(ctx, "DELETE FROM player_limit_changes WHERE user_id = ? AND name = ?", userID, ch.Name); err != nil {
					return fmt.Errorf("drop the waiting change of %s of %s: %w", ch.Name, userID, err)
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO player_limit_changes (user_id, name, value_minor, asked_at, effective_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, name) DO UPDATE SET value_minor = EXCLUDED.value_minor,
					asked_at = EXCLUDED.asked_at, effective_at = EXCLUDED.effective_at`,
				userID, ch.Name, ch.Value, now, now.Add(LooserAfter)); err != nil {
				return fmt.Errorf("record the looser %s of %s: %w", ch.Name, userID, err)
			}
		}
		sets, args := []string{"updated_at = ?"}, []any{now}
		for _, name := range Names {
			if v, ok := set[name]; ok {
				sets, args = append(sets, columns[name]+" = ?"), append(args, v)
			}
		}
		if c.Reminder != nil {
			sets, args = append(sets, "session_reminder_minutes = ?"), append(args, *c.Reminder)
		}
		args = append(args, userID)
		if _, err := tx.ExecContext(ctx, "UPDATE player_protection SET "+strings.Join(sets, ", ")+" WHERE user_id = ?", args...); err != nil {
			return fmt.Errorf("set the limits of %s: %w", userID, err)
		}
		return nil
	})
	if err != nil {
		return Limits{}, err
	}
	return s.Limits(ctx, userID)
}

// lockProtection takes the player's protection lock for the transaction
// (lockPlayers: changes of one player's protection are made one at a
// time, and not while money of theirs is going in) and creates their
// protection row when it is missing.
func lockProtection(ctx context.Context, tx db.Tx, userID string, now time.Time) error {
	if err := lockPlayers(ctx, tx, []string{userID}); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO player_protection (user_id, updated_at) VALUES (?, ?)
		ON CONFLICT (user_id) DO NOTHING`, userID, now); err != nil {
		return fmt.Errorf("open the protection of %s: %w", userID, err)
	}
	return nil
}
