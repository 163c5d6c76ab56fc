// Package protection keeps a real-money player within what they chose and
// what the law of where they are allows: limits a player sets on deposits,
// net losses and stakes over rolling windows, time-outs and
// self-exclusions, an age gate and restricted regions, and the reality
// check of a signed-in session.
//
// Rules answers the rules, one function per rule, that every path putting
// money in (deposits, stakes, bets, market buys, donations, tips,
// tournament entries) asks in its own transaction through a small
// interface its package declares; paths taking money out never ask. So the
// JSON API, the pages, the SDK and the MCP server all meet the same rules.
// Service is the player's side: reading and setting limits, starting an
// exclusion, confirming an age, the session's numbers.
//
// Net losses are read from the ledger: the movements of the player's
// available balance of the kinds in PlayKinds (a stake locked is a loss
// when it is locked; a payout or refund a gain when it is paid), plus the
// bets, which go from the wallet into a game's pool and are attributed to
// their bettor by the bet row of their signature. A bet refused when it
// landed (late) was never in play, and goes back to the wallet: it counts
// neither way.
package protection

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
)

// Limit names: the dotted names of the fields of GET /users/me/limits.
const (
	DepositDay   = "depositMinor.day"
	DepositWeek  = "depositMinor.week"
	DepositMonth = "depositMinor.month"
	LossDay      = "lossMinor.day"
	LossWeek     = "lossMinor.week"
	LossMonth    = "lossMinor.month"
	StakeMax     = "stakeMaxMinor"
)

// Names are the limits, in the order the refusals weigh them.
var Names = []string{DepositDay, DepositWeek, DepositMonth, LossDay, LossWeek, LossMonth, StakeMax}

// Rolling windows.
const (
	Day   = 24 * time.Hour
	Week  = 7 * Day
	Month = 30 * Day
)

// WindowOf is the rolling window of a deposit or loss limit (0 for the
// maximum stake, which has none).
func WindowOf(name string) time.Duration {
	switch {
	case strings.HasSuffix(name, ".day"):
		return Day
	case strings.HasSuffix(name, ".week"):
		return Week
	case strings.HasSuffix(name, ".month"):
		return Month
	}
	return 0
}

// LooserAfter is how long a looser limit (higher, or removed) waits
// before it applies; a tighter one applies at once.
const LooserAfter = 24 * time.Hour

// DefaultReminderMinutes is the reality check's interval for a player who
// did not choose one.
const DefaultReminderMinutes = 60

// MaxReminderMinutes is the longest interval of the reality check.
const MaxReminderMinutes = 1440

// MaxLimitMinor bounds a limit's value (one billion USDC): anything above
// is no limit at all and only risks overflows.
const MaxLimitMinor = 1_000_000_000 * 1_000_000

// PlayKinds are the ledger transaction kinds whose movements of a
// player's available balance count towards their net loss: stakes (a
// loss when locked) and what settles them, bets' payouts and refunds at
// settlement (bets themselves come from the wallet: see the package
// comment), and the market's buys, releases, trades and redemptions, and
// tournaments' entry fees (a loss when locked), their refunds and prizes.
// Deposits, withdrawals, referral claims and refunds of donations are not
// play, nor bet_refund: it credited back a late bet, which is not counted
// either. A new kind that puts money in play or pays it back is added here.
var PlayKinds = []string{"stake", "settlement", "bet_settlement",
	"market_order", "market_release", "market_trade", "market_redeem",
	"tournament_entry", "tournament_refund", "tournament_prize"}

// Config is what the operator sets.
type Config struct {
	// RequireAge refuses money in until the player confirms their age
	// (REQUIRE_AGE_CONFIRMATION).
	RequireAge bool
	// MinAge is the youngest a player may be (MIN_AGE).
	MinAge int
	// Restricted are the ISO 3166-1 alpha-2 codes, upper case, of the
	// countries where no money goes in (RESTRICTED_COUNTRIES).
	Restricted []string
}

// DefaultMinAge is MIN_AGE's default.
const DefaultMinAge = 18

// Rules answers the rules of the money-in paths.
type Rules struct {
	db  *bun.DB
	now domain.Clock
	cfg Config
}

// NewRules returns the player protection rules of the money-in paths.
func NewRules(bdb *bun.DB, now domain.Clock, cfg Config) *Rules {
	if cfg.MinAge <= 0 {
		cfg.MinAge = DefaultMinAge
	}
	return &Rules{db: bdb, now: now, cfg: cfg}
}

// Config is the operator's configuration.
func (g *Rules) Config() Config { return g.cfg }

// Now is the time by the rules' clock.
func (g *Rules) Now() time.Time { return g.now().UTC() }

type countryKey struct{}

// WithCountry returns ctx carrying the country of the request it belongs
// to (ISO 3166-1 alpha-2), as a trusted proxy named it.
func WithCountry(ctx context.Context, country string) context.Context {
	return context.WithValue(ctx, countryKey{}, strings.ToUpper(country))
}

// CountryOf returns the request's country, "" when no trusted proxy named
// one.
func CountryOf(ctx context.Context) string {
	c, _ := ctx.Value(countryKey{}).(string)
	return c
}

// flow is a movement in a window: a loss (positive) or gain (negative),
// or a deposit.
type flow struct {
	At    time.Time `json:"at"`
	Minor int64     `json:"minor"`
}

// Pending is a looser limit waiting to apply.
type Pending struct {
	Name        string    `json:"name" enum:"depositMinor.day,depositMinor.week,depositMinor.month,lossMinor.day,lossMinor.week,lossMinor.month,stakeMaxMinor"`
	Value       *int64    `json:"value" doc:"the new limit in USDC minor units; null: the limit is removed"`
	EffectiveAt time.Time `json:"effectiveAt" doc:"when it applies: 24 hours after it was asked for"`
}

// Exclusion is a running time-out or self-exclusion.
type Exclusion struct {
	Kind     string     `json:"kind" enum:"timeout,self-exclusion"`
	StartsAt time.Time  `json:"startsAt"`
	Until    *time.Time `json:"until" doc:"when it ends; null: never (a permanent self-exclusion)"`
}

// state is what the rules know of one player at one moment.
type state struct {
	UserID string `bun:"user_id"`
	// The limits as last written, before the pending changes that have
	// matured since (nil: no limit).
	DepositDay   *int64     `bun:"deposit_day_minor"`
	DepositWeek  *int64     `bun:"deposit_week_minor"`
	DepositMonth *int64     `bun:"deposit_month_minor"`
	LossDay      *int64     `bun:"loss_day_minor"`
	LossWeek     *int64     `bun:"loss_week_minor"`
	LossMonth    *int64     `bun:"loss_month_minor"`
	StakeMax     *int64     `bun:"stake_max_minor"`
	Reminder     int        `bun:"reminder"`
	BirthDate    *time.Time `bun:"birth_date"`
	Underage     bool       `bun:"underage"`
	ConfirmedAt  *time.Time `bun:"age_confirmed_at"`
	PendingJSON  []byte     `bun:"pending"`
	ExKind       *string    `bun:"ex_kind"`
	ExStarts     *time.Time `bun:"ex_starts_at"`
	ExUntil      *time.Time `bun:"ex_until"`
	LossesJSON   []byte     `bun:"losses"`
	DepositsJSON []byte     `bun:"deposits"`

	pending   []Pending
	exclusion *Exclusion
	losses    []flow
	deposits  []flow
}

// limits returns the limits in force at now: the stored ones with the
// pending changes that have matured.
func (s *state) limits(now time.Time) map[string]*int64 {
	out := map[string]*int64{DepositDay: s.DepositDay, DepositWeek: s.DepositWeek, DepositMonth: s.DepositMonth,
		LossDay: s.LossDay, LossWeek: s.LossWeek, LossMonth: s.LossMonth, StakeMax: s.StakeMax}
	for _, p := range s.pending {
		if !now.Before(p.EffectiveAt) {
			out[p.Name] = p.Value
		}
	}
	return out
}

// waiting returns the pending changes that have not matured at now.
func (s *state) waiting(now time.Time) []Pending {
	out := []Pending{}
	for _, p := range s.pending {
		if now.Before(p.EffectiveAt) {
			out = append(out, p)
		}
	}
	return out
}

// What a read of the states needs of the ledger.
type needs struct {
	losses   bool // the loss flows, for players with a loss limit
	deposits bool // the deposit flows, for players with a deposit limit
	all      bool // both, whatever the limits (for showing what is used)
	since    time.Time
	except   *string // an intent left out of the deposits (the deposit or bet being weighed)
}

// states reads the protection state of users at now in one statement:
// their row, pending changes, running exclusion and, where needs asks,
// the flows of the last 30 days. A user without a row has the zero
// state (no limits, age not confirmed). An exclusion counts from the
// moment it is read committed, whatever now says: none starts in the
// future, and a request that waited for it is answered after it.
func (g *Rules) states(ctx context.Context, idb bun.IDB, users []string, now time.Time, n needs) (map[string]*state, error) {
	if n.since.IsZero() {
		n.since = now.Add(-Month)
	}
	var rows []*state
	err := idb.NewRaw(`SELECT u.id AS user_id,
			p.deposit_day_minor, p.deposit_week_minor, p.deposit_month_minor,
			p.loss_day_minor, p.loss_week_minor, p.loss_month_minor, p.stake_max_minor,
			coalesce(p.session_reminder_minutes, ?3) AS reminder, p.birth_date, coalesce(p.underage, false) AS underage,
			p.age_confirmed_at,
			(SELECT coalesce(json_agg(json_build_object('name', c.name, 'value', c.value_minor, 'effectiveAt', c.effective_at)
				ORDER BY c.name), '[]') FROM player_limit_changes AS c WHERE c.user_id = u.id) AS pending,
			x.kind AS ex_kind, x.starts_at AS ex_starts_at, x.until AS ex_until,
			CASE WHEN ?4 OR (?5 AND (p.loss_day_minor IS NOT NULL OR p.loss_week_minor IS NOT NULL OR p.loss_month_minor IS NOT NULL))
			THEN (SELECT coalesce(json_agg(json_build_object('at', f.at, 'minor', f.minor) ORDER BY f.at), '[]') FROM (
				SELECT t.created_at AS at, -e.amount AS minor FROM ledger_entries AS e
					JOIN ledger_transactions AS t ON t.id = e.transaction_id
					WHERE e.account_id = 'user:' || u.id || ':available' AND t.kind = ANY(?7) AND t.created_at > ?1
				UNION ALL
				SELECT t.created_at, e.amount FROM bets AS b
					JOIN ledger_transactions AS t ON t.reference = b.signature AND t.kind = 'bet'
					JOIN ledger_entries AS e ON e.transaction_id = t.id AND e.account_id = 'game:' || b.game_id || ':bets'
					WHERE b.bettor_id = u.id AND NOT b.late AND b.created_at > ?1 AND t.created_at > ?1) AS f) END AS losses,
			CASE WHEN ?4 OR (?6 AND (p.deposit_day_minor IS NOT NULL OR p.deposit_week_minor IS NOT NULL OR p.deposit_month_minor IS NOT NULL))
			THEN (SELECT coalesce(json_agg(json_build_object('at', f.at, 'minor', f.minor) ORDER BY f.at), '[]') FROM (
				SELECT t.created_at AS at, e.amount AS minor FROM ledger_entries AS e
					JOIN ledger_transactions AS t ON t.id = e.transaction_id
					WHERE e.account_id = 'user:' || u.id || ':available' AND t.kind = 'deposit' AND t.created_at > ?1
				UNION ALL
				-- Bets from the wallet are deposits too: what they win or get
				-- back is paid to the platform balance.
				SELECT t.created_at, e.amount FROM bets AS b
					JOIN ledger_transactions AS t ON t.reference = b.signature AND t.kind = 'bet'
					JOIN ledger_entries AS e ON e.transaction_id = t.id AND e.account_id = 'game:' || b.game_id || ':bets'
					WHERE b.bettor_id = u.id AND NOT b.late AND b.created_at > ?1 AND t.created_at > ?1
				UNION ALL
				-- Deposits and bets prepared and not yet confirmed count too:
				-- several prepared at once cannot pass the limit together.
				SELECT i.created_at, i.amount_minor FROM intents AS i
					WHERE i.user_id = u.id AND i.kind IN ('deposit', 'bet') AND i.created_at > ?1
						AND (i.status = 'submitted' OR (i.status = 'prepared' AND i.expires_at > ?2))
						AND i.id IS DISTINCT FROM ?8::uuid) AS f) END AS deposits
		FROM unnest(?0::uuid[]) AS u (id)
		LEFT JOIN player_protection AS p ON p.user_id = u.id
		LEFT JOIN LATERAL (SELECT e.kind, e.starts_at, e.until FROM exclusions AS e
			WHERE e.user_id = u.id AND (e.until IS NULL OR e.until > ?2)
			ORDER BY e.until DESC NULLS FIRST LIMIT 1) AS x ON true`,
		pgdialect.Array(users), n.since, now, DefaultReminderMinutes, n.all, n.losses, n.deposits,
		pgdialect.Array(PlayKinds), n.except).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read the protection of %d players: %w", len(users), err)
	}
	out := make(map[string]*state, len(rows))
	for _, s := range rows {
		if err := s.decode(); err != nil {
			return nil, fmt.Errorf("read the protection of %s: %w", s.UserID, err)
		}
		out[s.UserID] = s
	}
	return out, nil
}

// lockPlayers takes the protection locks of users for the rest of tx, in
// user id order: the transactions that change a player's limits or start
// an exclusion, and those that read the rules to put money in (a stake,
// an entry, a bet, a deposit, a market buy), run one at a time per
// player, each reading, in a later statement, what those before it
// committed. Two transactions that put the same player's money in at
// once cannot both be weighed against the losses before either.
func lockPlayers(ctx context.Context, tx db.Tx, users []string) error {
	ids := slices.Compact(slices.Sorted(slices.Values(users)))
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('player_protection'), hashtext(u)) FROM unnest(?::text[]) AS u",
		pgdialect.Array(ids)); err != nil {
		return fmt.Errorf("lock the protection of %d players: %w", len(ids), err)
	}
	return nil
}

func (s *state) decode() error {
	for _, j := range []struct {
		raw []byte
		to  any
	}{{s.PendingJSON, &s.pending}, {s.LossesJSON, &s.losses}, {s.DepositsJSON, &s.deposits}} {
		if len(j.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(j.raw, j.to); err != nil {
			return err
		}
	}
	if s.ExKind != nil && s.ExStarts != nil {
		s.exclusion = &Exclusion{Kind: *s.ExKind, StartsAt: s.ExStarts.UTC(), Until: s.ExUntil}
		if s.ExUntil != nil {
			u := s.ExUntil.UTC()
			s.exclusion.Until = &u
		}
	}
	return nil
}

// state reads one user's state.
func (g *Rules) state(ctx context.Context, idb bun.IDB, userID string, now time.Time, n needs) (*state, error) {
	m, err := g.states(ctx, idb, []string{userID}, now, n)
	if err != nil {
		return nil, err
	}
	s := m[userID]
	if s == nil {
		return nil, fmt.Errorf("read the protection of %s: no row", userID)
	}
	return s, nil
}
