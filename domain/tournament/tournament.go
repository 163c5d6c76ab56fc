// Package tournament runs arenas: for a fixed time, the entrants of a
// tournament are paired again and again into ordinary free games of one
// type (closest scores first, never the same opponent twice in a row when
// another choice exists); each result scores (win 2, draw 1, and 4 for a
// win on fire, after two wins in a row); at the end the entry fees are
// paid out as prizes by the final standings.
//
// The rules are pure (rules.go: scoring, standings, the choice of
// pairings, the prize arithmetic). The Service runs them in database
// transactions under the policy of db/doc.go, the tournament's row first,
// then its players' rows, then ledger accounts: entries and refunds lock
// and release fees like stakes (available to locked), and the end pays
// the prizes out of the entrants' locked fees in one balanced ledger
// transaction keyed by the tournament, so it is paid once. Scheduled work
// (the reminder, the start or cancellation, pairing, standings, the end)
// is done by a worker that claims each tournament's row with FOR UPDATE
// SKIP LOCKED, so that several instances never pair one player twice.
// Results come from the games themselves: the tournament is a
// game.Participant, told of each finished game in the transaction that
// finishes it. Every change of a tournament's room is an event row with
// a per-tournament seq, appended in the transaction that causes it and
// published after the commit.
package tournament

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/money"
)

// Statuses of a tournament.
const (
	StatusScheduled = "scheduled"
	StatusRunning   = "running"
	StatusFinished  = "finished"
	StatusCancelled = "cancelled"
)

// Limits of a new tournament.
const (
	MaxName           = 60
	MinEntryFee       = 100_000     // 0.1 USDC: a paid entry is at least this
	MaxEntryFee       = 100_000_000 // 100 USDC
	MaxAhead          = 7 * 24 * time.Hour
	MaxDuration       = 180 // minutes
	DefaultMaxPlayers = 64
	// MaxPlayers is the largest maxPlayers a tournament may ask for,
	// unless the operator allows more (TOURNAMENT_MAX_PLAYERS).
	MaxPlayers = 256
	MaxPlaces  = 10
	// DefaultCreatePerDay is how many arenas one player may create in 24
	// hours (TOURNAMENT_CREATE_PER_DAY), and DefaultScheduledMax how many
	// may be scheduled or running at once (TOURNAMENTS_SCHEDULED_MAX):
	// junk arenas must not crowd out the ones people play.
	DefaultCreatePerDay = 5
	DefaultScheduledMax = 200
	// CreateWindow is the rolling window of the per-player limit.
	CreateWindow = 24 * time.Hour
	// FullRetry is the shortest Retry-After of a creation refused because
	// too many arenas are scheduled or running.
	FullRetry = time.Minute
	// StartSlack is how far in the past a startsAt may be and still be
	// read as now: a client that asks for "now" is a moment late.
	StartSlack = time.Minute
	// RemindBefore is when entrants are told the tournament starts.
	RemindBefore = time.Minute
	// StandingsEvery is the least time between two standings events of
	// a tournament's room.
	StandingsEvery = time.Second
	// StandingsRows is how many lines a standings event carries: the
	// first ones (GET /tournaments/:id has all of them).
	StandingsRows = 100
)

// DefaultSplit is the prize split of a tournament that names none.
var DefaultSplit = []int{5000, 3000, 2000}

// UserRef names a user.
type UserRef struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
}

// NewTournament is what creating a tournament takes.
type NewTournament struct {
	Name            string          `json:"name" minLength:"1" maxLength:"60"`
	GameType        string          `json:"gameType" enum:"connect4,rps" doc:"a game type of GET /games/available"`
	Settings        json.RawMessage `json:"settings,omitempty" schema:"GameSettings" doc:"the games' settings (the game type's defaults when absent)"`
	EntryFeeMinor   int64           `json:"entryFeeMinor" minimum:"0" maximum:"100000000" doc:"0 for a free tournament, or 100000 to 100000000 (0.1 to 100 USDC)"`
	StartsAt        string          `json:"startsAt" format:"date-time" doc:"RFC 3339, from now to 7 days ahead"`
	DurationMinutes int             `json:"durationMinutes" minimum:"1" maximum:"180"`
	MaxPlayers      *int            `json:"maxPlayers,omitempty" minimum:"2" doc:"2 to 256 (or the server's TOURNAMENT_MAX_PLAYERS); default 64"`
	PrizeSplitBps   []int           `json:"prizeSplitBps,omitempty" minItems:"1" maxItems:"10" doc:"what each place wins of the pool less the fee, in basis points: 1 to 10 whole numbers, each 0 or more, summing to 10000; default [5000, 3000, 2000]"`
	AgentsAllowed   *bool           `json:"agentsAllowed,omitempty" doc:"whether bot accounts (POST /users/me/bot) may enter; default true"`
}

// validated is a NewTournament that passed Validate.
type validated struct {
	name       string
	gameType   string
	settings   json.RawMessage
	fee        int64
	startsAt   time.Time
	endsAt     time.Time
	maxPlayers int
	split      []int
	agents     bool
}

// Validate checks every field at now, allowing maxPlayers up to limit. It
// returns VALIDATION_ERROR naming each invalid field, or the normalized
// tournament.
func (n NewTournament) Validate(now time.Time, limit int) (validated, error) {
	v := domain.Validator{}
	out := validated{gameType: n.GameType, fee: n.EntryFeeMinor, maxPlayers: DefaultMaxPlayers, agents: n.AgentsAllowed == nil || *n.AgentsAllowed}
	out.name = strings.TrimSpace(v.Text("name", n.Name, false, MaxName))
	v.Check(out.name != "", "name", "must be 1 to 60 characters")
	r, ok := rules.Get(n.GameType)
	v.Check(ok, "gameType", "unknown game type; see GET /games/available")
	if ok {
		settings, err := r.ParseSettings(n.Settings)
		if e, isDomain := err.(*domain.Error); isDomain {
			for f, reason := range e.Fields {
				v.Check(false, f, reason)
			}
			if len(e.Fields) == 0 {
				v.Check(false, "settings", e.Message)
			}
		} else if err != nil {
			v.Check(false, "settings", err.Error())
		}
		out.settings = settings
	}
	v.Check(n.EntryFeeMinor == 0 || (n.EntryFeeMinor >= MinEntryFee && n.EntryFeeMinor <= MaxEntryFee), "entryFeeMinor",
		"must be 0 (free) or from "+money.USDC(MinEntryFee)+" to "+money.USDC(MaxEntryFee))
	starts, err := time.Parse(time.RFC3339, n.StartsAt)
	switch {
	case n.StartsAt == "":
		v.Check(false, "startsAt", "required: an RFC 3339 time from now to 7 days ahead")
	case err != nil:
		v.Check(false, "startsAt", "must be an RFC 3339 time such as 2026-11-26T18:00:00Z")
	case starts.Before(now.Add(-StartSlack)):
		v.Check(false, "startsAt", "must not be in the past")
	case starts.After(now.Add(MaxAhead)):
		v.Check(false, "startsAt", "must be at most 7 days ahead")
	}
	if starts.Before(now) {
		starts = now
	}
	out.startsAt = starts.UTC().Truncate(time.Millisecond)
	v.Check(n.DurationMinutes >= 1 && n.DurationMinutes <= MaxDuration, "durationMinutes", "must be from 1 to 180")
	out.endsAt = out.startsAt.Add(time.Duration(n.DurationMinutes) * time.Minute)
	if n.MaxPlayers != nil {
		out.maxPlayers = *n.MaxPlayers
		v.Check(out.maxPlayers >= 2 && out.maxPlayers <= max(limit, 2), "maxPlayers", "must be from 2 to "+itoa(max(limit, 2)))
	}
	out.split = slices.Clone(DefaultSplit)
	if n.PrizeSplitBps != nil {
		out.split = n.PrizeSplitBps
		v.Check(SplitValid(n.PrizeSplitBps), "prizeSplitBps", "must be 1 to 10 whole numbers, each 0 or more, summing to 10000")
	}
	if err := v.Err(); err != nil {
		return validated{}, err
	}
	return out, nil
}

// SplitValid reports whether a prize split has 1 to MaxPlaces places,
// none negative, summing to 10000.
func SplitValid(split []int) bool {
	if len(split) < 1 || len(split) > MaxPlaces {
		return false
	}
	sum := 0
	for _, b := range split {
		if b < 0 || b > 10_000 {
			return false
		}
		sum += b
	}
	return sum == 10_000
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
