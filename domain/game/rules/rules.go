// Package rules holds the game types as pure code: no I/O, no clock and no
// global randomness. The caller passes the time and a source of random bytes,
// stores the state (State.MarshalJSON) and publishes the events. A new game
// type is one new file with a Rules implementation and a line in All.
package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"wager/domain"
)

// Event is something that happened in a game, visible to everyone
// (players and spectators alike); its Data is one of this package's event
// payload types and never contains hidden information.
type Event = domain.Event

// Outcome is how a game ended.
type Outcome struct {
	Done   bool   `json:"done"`
	Winner string `json:"winnerId"` // user id; "" when Done and it is a draw
	Reason string `json:"reason"`   // "score", "resign", "timeout", "abandoned", "connect4", "board-full", ...
	// Flawless is a win of a best-of-3 or longer in which the loser won
	// no round.
	Flawless bool `json:"flawless,omitempty"`
	// TimedOut says a round or turn of the game was lost on time: a
	// player who stops playing can throw a game that way as surely as by
	// resigning.
	TimedOut bool `json:"timedOut,omitempty"`
}

// Info describes a game type for GET /games/available.
type Info struct {
	GameType     string            `json:"gameType" enum:"connect4,rps"`
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	MinPlayers   int               `json:"minPlayers"`
	MaxPlayers   int               `json:"maxPlayers"`
	Settings     map[string]int    `json:"settings" doc:"the default settings"`
	SettingsHelp map[string]string `json:"settingsHelp" doc:"what each setting accepts"`
}

// Rules is one game type.
type Rules interface {
	// Info describes the game type.
	Info() Info
	// ParseSettings validates lobby settings (raw may be nil, empty or
	// "null" for all defaults), applies defaults and returns the normalized
	// settings JSON. Errors are VALIDATION_ERROR naming the field
	// ("settings.rounds").
	ParseSettings(raw json.RawMessage) (json.RawMessage, error)
	// Start begins a game between players (exactly 2, in seat order) with
	// normalized settings at now. It returns the state and the opening
	// events. VALIDATION_ERROR for bad settings or players.
	Start(gameID string, players []string, settings json.RawMessage, now time.Time) (State, []Event, error)
	// Load decodes a state produced by State.MarshalJSON; a plain error
	// when data is not such a state.
	Load(data []byte) (State, error)
}

// State is one game in progress or finished. Methods mutate the state in
// place; a method that returns an error changes nothing.
type State interface {
	// Move applies a player's move; rand supplies salts. Errors:
	// INVALID_MOVE (bad move JSON, illegal move, or a move after the
	// deadline), ALREADY_MOVED, NOT_YOUR_TURN, GAME_NOT_ACTIVE, NOT_A_PLAYER
	// (a user who is not in the game), or a plain error when rand fails.
	Move(player string, move json.RawMessage, now time.Time, rand io.Reader) ([]Event, error)
	// Resign ends the game: the other player wins. GAME_NOT_ACTIVE when the
	// game is over, NOT_A_PLAYER for a user who is not in the game.
	Resign(player string, now time.Time) ([]Event, error)
	// Deadline is when the current round or turn times out (zero when the
	// game is over).
	Deadline() time.Time
	// Expire applies the timeout rules if now >= Deadline(); otherwise it
	// returns nil and changes nothing.
	Expire(now time.Time) []Event
	// Resume gives the current round or turn its full time again, counted
	// from now: for a deadline that passed while the platform was down.
	// What was already played in the round stands. It reports false and
	// changes nothing once the game is over.
	Resume(now time.Time) bool
	// Berserk halves player's time for each of their rounds or turns of
	// the rest of the game (rounded down, at least MinBerserkSeconds), the
	// one running included, before their first move (an arena's
	// berserk). Errors: GAME_NOT_ACTIVE, NOT_A_PLAYER, CONFLICT once they
	// moved or went berserk already.
	Berserk(player string, now time.Time) ([]Event, error)
	// Berserked reports whether player went berserk in the game.
	Berserked(player string) bool
	// RanOutOfTime reports whether player's own time ran out in the game:
	// a round they did not choose in (rock, paper, scissors), or their
	// turn (Connect Four).
	RanOutOfTime(player string) bool
	// Played is how much of the game player played: their moves
	// (Connect Four), or the rounds revealed (rock, paper, scissors).
	Played(player string) int
	// Public is the view anyone may see at now, the same for players and
	// spectators: never a hidden choice before its reveal. Its ViewHeader
	// is the caller's to fill.
	Public(now time.Time) View
	// Outcome is how the game ended, or the zero Outcome while it runs.
	Outcome() Outcome
	// MarshalJSON is the full state including hidden data, for persistence
	// only.
	MarshalJSON() ([]byte, error)
	// Clone is a copy that shares nothing a method of either changes: a
	// state kept decoded is cloned before each move instead of decoded
	// again.
	Clone() State
}

// Events are the room events of the game types by name, each with its
// data type: the live protocol's document (GET /asyncapi.json) is
// generated from them.
var Events = map[domain.EventName]any{
	domain.EventRPSRoundStart: RPSRoundStart{}, domain.EventRPSRoundSubmitted: RPSSubmitted{},
	domain.EventRPSRoundReveal: RPSRound{}, domain.EventRPSResign: RPSResign{},
	domain.EventConnect4Start: C4Start{}, domain.EventConnect4Move: C4Moved{},
	domain.EventConnect4Timeout: C4Forfeit{}, domain.EventConnect4Resign: C4Forfeit{},
	domain.EventBerserk: Berserked{},
}

// MinBerserkSeconds is the least time a round or turn of a player who went
// berserk has.
const MinBerserkSeconds = 3

// halved is a round's or turn's seconds for a player who went berserk.
func halved(seconds int) int { return max(seconds/2, MinBerserkSeconds) }

// Berserked is the data of game:berserk: a player of an arena game halved
// their time for the rest of the game.
type Berserked struct {
	UserID   string  `json:"userId"`
	Seconds  int     `json:"seconds" doc:"the player's seconds per round or turn from now on: half the game's, rounded down, at least 3"`
	Deadline *string `json:"deadline" doc:"the running round's or turn's deadline after it (a turn of the player's own ends sooner; a round's common deadline does not move)"`
}

// berserkTooShort is the CONFLICT of a berserk in a game whose rounds or
// turns halve to no less (MinBerserkSeconds).
func berserkTooShort(seconds int) error {
	return domain.Errorf(domain.CodeConflict, "rounds or turns of %d seconds are too short to halve: berserk needs more than %d", seconds, MinBerserkSeconds)
}

// errBerserkTooLate is the CONFLICT of a berserk after half of the
// player's round or turn has passed: it would lose it at once.
var errBerserkTooLate = domain.Errorf(domain.CodeConflict, "half of your round or turn has passed already: it is too late to go berserk in it")

// berserkRefusal is the CONFLICT of a berserk after the player's first
// move, or a second one.
func berserkRefusal(again bool) error {
	if again {
		return domain.Errorf(domain.CodeConflict, "you went berserk in this game already")
	}
	return domain.Errorf(domain.CodeConflict, "berserk is chosen before your first move of the game, and you have moved")
}

// All is the registry of game types by gameType.
var All = map[string]Rules{"rps": RPS{}, "connect4": ConnectFour{}}

// Get returns the rules of a game type, or false when there is no such type.
func Get(gameType string) (Rules, bool) {
	r, ok := All[gameType]
	return r, ok
}

// Available lists the Info of all game types, sorted by GameType.
func Available() []Info {
	out := make([]Info, 0, len(All))
	for _, r := range All {
		out = append(out, r.Info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GameType < out[j].GameType })
	return out
}

// intSetting is one integer lobby setting.
type intSetting struct {
	name     string
	def      int
	min, max int
	odd      bool
	help     string
}

// parseIntSettings validates a settings object of gameType whose members
// are all integer settings, and returns the normalized object with every
// setting and the game type (gameType, the member that tells one game
// type's settings from another's; a request may leave it out).
// Unknown members are refused so that a typo does not silently fall back
// to a default.
func parseIntSettings(raw json.RawMessage, gameType string, specs []intSetting) (json.RawMessage, map[string]int, error) {
	values := make(map[string]int, len(specs))
	for _, s := range specs {
		values[s.name] = s.def
	}
	var members map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || json.Unmarshal(trimmed, &members) != nil {
			return nil, nil, domain.Invalid(map[string]string{"settings": "must be a JSON object"})
		}
	}
	v := domain.Validator{}
	for name, m := range members {
		if name == settingsDiscriminator {
			var named string
			v.Check(json.Unmarshal(m, &named) == nil && named == gameType, "settings."+name, "must be "+strconv.Quote(gameType)+", the game type")
			continue
		}
		known := slices.ContainsFunc(specs, func(s intSetting) bool { return s.name == name })
		v.Check(known, "settings."+name, "unknown setting")
	}
	for _, s := range specs {
		m, ok := members[s.name]
		if !ok || bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
			continue
		}
		var f float64
		err := json.Unmarshal(m, &f)
		n := int(f)
		valid := err == nil && f == math.Trunc(f) && f >= float64(s.min) && f <= float64(s.max) && (!s.odd || n%2 == 1)
		v.Check(valid, "settings."+s.name, "must be "+s.help)
		values[s.name] = n
	}
	if err := v.Err(); err != nil {
		return nil, nil, err
	}
	norm := make(map[string]any, len(values)+1)
	for k, n := range values {
		norm[k] = n
	}
	norm[settingsDiscriminator] = gameType
	raw, err := json.Marshal(norm)
	return raw, values, err
}

// settingsDiscriminator is the member of every settings object that names
// its game type.
const settingsDiscriminator = "gameType"

// defaults returns the default settings of specs for Info.
func defaults(specs []intSetting) (map[string]int, map[string]string) {
	d, h := map[string]int{}, map[string]string{}
	for _, s := range specs {
		d[s.name], h[s.name] = s.def, s.help
	}
	return d, h
}

// withSettings is a game type whose settings are integer settings.
type withSettings interface{ settingSpecs() []intSetting }

func (RPS) settingSpecs() []intSetting         { return rpsSettings }
func (ConnectFour) settingSpecs() []intSetting { return c4Settings }

// SettingsSchema returns the JSON Schema of a game type's settings object,
// with the limits ParseSettings enforces (an odd setting lists its
// values), or false for an unknown game type. Every setting is optional
// (a default applies); gameType, which answers always carry, tells one
// game type's settings from another's.
func SettingsSchema(gameType string) (map[string]any, bool) {
	r, ok := All[gameType].(withSettings)
	if !ok {
		return nil, false
	}
	props := map[string]any{}
	for _, s := range r.settingSpecs() {
		p := map[string]any{"type": "integer", "minimum": s.min, "maximum": s.max, "default": s.def, "description": s.help}
		if s.odd {
			var values []int
			for v := s.min; v <= s.max; v++ {
				if v%2 == 1 {
					values = append(values, v)
				}
			}
			p["enum"] = values
		}
		props[s.name] = p
	}
	props[settingsDiscriminator] = map[string]any{"type": "string", "enum": []string{gameType},
		"description": "the game type: which game's settings these are (a request may leave it out)"}
	return map[string]any{"type": "object", "title": All[gameType].Info().Name + " settings", "properties": props,
		"required": []string{settingsDiscriminator}, "additionalProperties": false}, true
}

// checkPlayers validates the seats of a two-player game.
func checkPlayers(players []string) error {
	if len(players) != 2 || players[0] == "" || players[1] == "" || players[0] == players[1] {
		return domain.Invalid(map[string]string{"players": "exactly 2 distinct players"})
	}
	return nil
}

// seatOf returns the seat of player, or NOT_A_PLAYER.
func seatOf(players []string, player string) (int, error) {
	if i := slices.Index(players, player); i >= 0 {
		return i, nil
	}
	return -1, domain.Errorf(domain.CodeNotAPlayer, "%q does not play in this game", player)
}

// notActive is the error for any action on a finished game.
func notActive() error {
	return domain.Errorf(domain.CodeGameNotActive, "the game is over")
}

// timeString formats a time for JSON (RFC 3339 in UTC), nil for the zero time.
func timeString(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// timer is the public timer: the deadline and what is left of it at now.
func timer(deadline, now time.Time) Timer {
	left := int64(0)
	if !deadline.IsZero() && now.Before(deadline) {
		left = deadline.Sub(now).Milliseconds()
	}
	return Timer{Deadline: timeString(deadline), RemainingMs: left}
}

// optional maps "" to nil (JSON null).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// loadError wraps a decoding failure of a stored state.
func loadError(gameType string, err error) error {
	return fmt.Errorf("rules: bad stored %s state: %w", gameType, err)
}
