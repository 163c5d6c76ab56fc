package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"wager/domain"
)

// RPS is rock, paper, scissors: best of an odd number of decisive rounds,
// simultaneous hidden choices with a public commitment, draw rounds
// replayed, and a round timer that a player loses the round to.
type RPS struct{}

var rpsSettings = []intSetting{
	{name: "rounds", def: 3, min: 1, max: 9, odd: true, help: "an odd whole number from 1 to 9 (best of that many decisive rounds)"},
	{name: "roundSeconds", def: 20, min: 3, max: 120, help: "a whole number of seconds from 3 to 120"},
}

// rpsBeats maps each choice to the choice it beats.
var rpsBeats = map[string]string{"rock": "scissors", "paper": "rock", "scissors": "paper"}

// saltBytes is the size of a commitment salt before hex encoding.
const saltBytes = 16

// Commitment returns the public commitment to a choice: the hex SHA-256 of
// gameID|round|userID|choice|salt. Anyone can recompute it from a reveal.
func Commitment(gameID string, round int, userID, choice, salt string) string {
	sum := sha256.Sum256([]byte(gameID + "|" + strconv.Itoa(round) + "|" + userID + "|" + choice + "|" + salt))
	return hex.EncodeToString(sum[:])
}

// Info describes rock, paper, scissors.
func (RPS) Info() Info {
	d, h := defaults(rpsSettings)
	return Info{GameType: "rps", Name: "Rock, paper, scissors",
		Description: "Both players choose rock, paper or scissors in secret; the choices are revealed together. " +
			"Draw rounds are replayed; the first to win the majority of the rounds wins. " +
			"A player who lets the round timer run out loses that round. Every choice is committed " +
			"(SHA-256 of gameId|round|userId|choice|salt) before the reveal, so anyone can check it.",
		MinPlayers: 2, MaxPlayers: 2, Settings: d, SettingsHelp: h}
}

// ParseSettings validates rounds and roundSeconds and applies defaults.
// VALIDATION_ERROR naming settings.rounds, settings.roundSeconds or an
// unknown setting.
func (RPS) ParseSettings(raw json.RawMessage) (json.RawMessage, error) {
	norm, _, err := parseIntSettings(raw, "rps", rpsSettings)
	return norm, err
}

// Start begins round 1 at now. VALIDATION_ERROR for bad settings or players.
func (RPS) Start(gameID string, players []string, settings json.RawMessage, now time.Time) (State, []Event, error) {
	if err := checkPlayers(players); err != nil {
		return nil, nil, err
	}
	_, v, err := parseIntSettings(settings, "rps", rpsSettings)
	if err != nil {
		return nil, nil, err
	}
	g := &rpsGame{GameID: gameID, Players: slices.Clone(players), Rounds: v["rounds"], RoundSeconds: v["roundSeconds"],
		Scores: map[string]int{players[0]: 0, players[1]: 0}, History: []rpsReveal{}}
	return g, []Event{g.startRound(1, now)}, nil
}

// Load decodes an rps state; a plain error when data is not one.
func (RPS) Load(data []byte) (State, error) {
	var g rpsGame
	if err := json.Unmarshal(data, (*rpsStored)(&g)); err != nil {
		return nil, loadError("rps", err)
	}
	if len(g.Players) != 2 || g.Rounds < 1 || g.RoundSeconds < 1 || g.Round < 1 {
		return nil, loadError("rps", fmt.Errorf("missing players, rounds or round"))
	}
	if g.Scores == nil {
		g.Scores = map[string]int{}
	}
	if g.Commitments == nil {
		g.Commitments = map[string]string{}
	}
	if g.Hidden == nil {
		g.Hidden = map[string]rpsSecret{}
	}
	if g.History == nil {
		g.History = []rpsReveal{}
	}
	return &g, nil
}

// rpsGame is the state of one rps game. Hidden is the only secret part:
// it never leaves this package except through MarshalJSON.
type rpsGame struct {
	GameID       string               `json:"gameId"`
	Players      []string             `json:"players"`
	Rounds       int                  `json:"rounds"`
	RoundSeconds int                  `json:"roundSeconds"`
	Round        int                  `json:"round"`
	RoundStart   time.Time            `json:"roundStart"`
	RoundEnd     time.Time            `json:"deadline"`    // zero once the game is over
	Scores       map[string]int       `json:"scores"`      // decisive rounds won
	Commitments  map[string]string    `json:"commitments"` // of the current round; public
	Hidden       map[string]rpsSecret `json:"hidden"`      // of the current round; secret until the reveal
	History      []rpsReveal          `json:"history"`
	Result       Outcome              `json:"outcome"`
	// Halved is the seconds per round of the players who went berserk.
	Halved map[string]int `json:"berserk,omitempty"`
}

// rpsStored is rpsGame without its methods, so that it marshals as a plain struct.
type rpsStored rpsGame

type rpsSecret struct {
	Choice string `json:"choice"`
	Salt   string `json:"salt"`
}

// rpsReveal is one closed round. A player who did not move has no choice,
// salt or commitment.
type rpsReveal struct {
	Round       int               `json:"round"`
	Choices     map[string]string `json:"choices"`
	Salts       map[string]string `json:"salts"`
	Commitments map[string]string `json:"commitments"`
	Winner      string            `json:"winnerId"`
	Reason      string            `json:"reason"` // played, timeout or abandoned
	Scores      map[string]int    `json:"scores"` // after the round
}

// view is the public form of a revealed round: the reveal event's data and
// a history entry. Absent players map to null.
func (r rpsReveal) view(players []string) RPSRound {
	v := RPSRound{Round: r.Round, Choices: make(map[string]*string, len(players)), Salts: make(map[string]*string, len(players)),
		Commitments: maps.Clone(r.Commitments), WinnerID: optional(r.Winner), Reason: r.Reason, Scores: maps.Clone(r.Scores)}
	for _, p := range players {
		v.Choices[p], v.Salts[p] = optional(r.Choices[p]), optional(r.Salts[p])
	}
	if v.Commitments == nil {
		v.Commitments = map[string]string{}
	}
	return v
}

// MarshalJSON returns the full state including the hidden choices, for
// persistence only.
func (g *rpsGame) MarshalJSON() ([]byte, error) { return json.Marshal((*rpsStored)(g)) }

// Clone copies the maps and the history; a closed round in the history is
// never changed, so the copies share its maps.
func (g *rpsGame) Clone() State {
	c := *g
	c.Players = slices.Clone(g.Players)
	c.Scores, c.Commitments, c.Hidden, c.Halved = maps.Clone(g.Scores), maps.Clone(g.Commitments), maps.Clone(g.Hidden), maps.Clone(g.Halved)
	c.History = slices.Clone(g.History)
	return &c
}

// Outcome is how the game ended, or the zero Outcome while it runs.
func (g *rpsGame) Outcome() Outcome { return g.Result }

// Deadline is when the current round closes unless both choose first:
// once every player who has not chosen is out of time (a player who went
// berserk has less of it), zero once the game is over.
func (g *rpsGame) Deadline() time.Time {
	if g.Result.Done {
		return time.Time{}
	}
	var d time.Time
	for _, p := range g.Players {
		if _, chose := g.Hidden[p]; !chose && g.endOf(p).After(d) {
			d = g.endOf(p)
		}
	}
	if d.IsZero() {
		return g.RoundEnd
	}
	return d
}

// endOf is the end of the current round for player: the round's end, or
// sooner for a player who went berserk.
func (g *rpsGame) endOf(player string) time.Time {
	if s, ok := g.Halved[player]; ok {
		return g.RoundEnd.Add(-time.Duration(g.RoundSeconds-s) * time.Second)
	}
	return g.RoundEnd
}

// Berserk halves the player's rounds, the one running included.
func (g *rpsGame) Berserk(player string, now time.Time) ([]Event, error) {
	if g.Result.Done {
		return nil, notActive()
	}
	if _, err := seatOf(g.Players, player); err != nil {
		return nil, err
	}
	_, again := g.Halved[player]
	if _, chose := g.Hidden[player]; again || chose || len(g.History) > 0 {
		return nil, berserkRefusal(again)
	}
	half := halved(g.RoundSeconds)
	if half >= g.RoundSeconds {
		return nil, berserkTooShort(g.RoundSeconds)
	}
	if !now.Before(g.RoundEnd.Add(-time.Duration(g.RoundSeconds-half) * time.Second)) {
		return nil, errBerserkTooLate
	}
	if g.Halved == nil {
		g.Halved = map[string]int{}
	}
	g.Halved[player] = half
	return []Event{{Name: domain.EventBerserk, Data: Berserked{UserID: player, Seconds: g.Halved[player], Deadline: timeString(g.RoundEnd)}}}, nil
}

// Berserked reports whether the player went berserk.
func (g *rpsGame) Berserked(player string) bool {
	_, ok := g.Halved[player]
	return ok
}

// RanOutOfTime reports whether a round closed with the player out of time
// and without a choice.
func (g *rpsGame) RanOutOfTime(player string) bool {
	return slices.ContainsFunc(g.History, func(r rpsReveal) bool { return r.Reason == "timeout" && r.Choices[player] == "" }) &&
		slices.Contains(g.Players, player)
}

// Played is the rounds revealed.
func (g *rpsGame) Played(string) int { return len(g.History) }

func (g *rpsGame) startRound(n int, now time.Time) Event {
	g.Round, g.RoundStart, g.RoundEnd = n, now, now.Add(time.Duration(g.RoundSeconds)*time.Second)
	g.Commitments, g.Hidden = map[string]string{}, map[string]rpsSecret{}
	return Event{Name: domain.EventRPSRoundStart, Data: RPSRoundStart{Round: n, Deadline: timeString(g.RoundEnd), RoundSeconds: g.RoundSeconds}}
}

// Move commits a player's hidden choice for the current round and reveals
// the round once both have chosen. Errors: GAME_NOT_ACTIVE, NOT_A_PLAYER,
// INVALID_MOVE (not "rock", "paper" or "scissors" as a JSON string, or the
// round's time is up), ALREADY_MOVED, or a plain error when rand fails.
func (g *rpsGame) Move(player string, move json.RawMessage, now time.Time, rand io.Reader) ([]Event, error) {
	if g.Result.Done {
		return nil, notActive()
	}
	if _, err := seatOf(g.Players, player); err != nil {
		return nil, err
	}
	var choice string
	if err := json.Unmarshal(move, &choice); err != nil || rpsBeats[choice] == "" {
		return nil, domain.Errorf(domain.CodeInvalidMove, `an rps move is "rock", "paper" or "scissors"`)
	}
	if !now.Before(g.endOf(player)) {
		// The timer decides, not how soon the expiry job runs.
		return nil, domain.Errorf(domain.CodeInvalidMove, "the time for round %d is up", g.Round)
	}
	if _, moved := g.Hidden[player]; moved {
		return nil, domain.Errorf(domain.CodeAlreadyMoved, "you already chose in round %d", g.Round)
	}
	b := make([]byte, saltBytes)
	if _, err := io.ReadFull(rand, b); err != nil {
		return nil, fmt.Errorf("rps: reading a salt: %w", err)
	}
	salt := hex.EncodeToString(b)
	c := Commitment(g.GameID, g.Round, player, choice, salt)
	g.Hidden[player] = rpsSecret{Choice: choice, Salt: salt}
	g.Commitments[player] = c
	events := []Event{{Name: domain.EventRPSRoundSubmitted, Data: RPSSubmitted{Round: g.Round, UserID: player, Commitment: c}}}
	if len(g.Hidden) == len(g.Players) {
		events = append(events, g.closeRound(now)...)
	}
	return events, nil
}

// Expire closes the current round when its time is up: a player who did not
// choose loses it, and when neither chose the game ends as an abandoned draw.
func (g *rpsGame) Expire(now time.Time) []Event {
	if g.Result.Done || now.Before(g.Deadline()) {
		return nil
	}
	return g.closeRound(now)
}

// Resume gives the current round its full time again from now; the
// choices already made in it stand. False once the game is over.
func (g *rpsGame) Resume(now time.Time) bool {
	if g.Result.Done {
		return false
	}
	g.RoundEnd = now.Add(time.Duration(g.RoundSeconds) * time.Second)
	return true
}

// closeRound reveals the current round, scores it, and either ends the game
// or starts the next round at now.
func (g *rpsGame) closeRound(now time.Time) []Event {
	r := rpsReveal{Round: g.Round, Choices: map[string]string{}, Salts: map[string]string{},
		Commitments: maps.Clone(g.Commitments)}
	var movers []string
	for _, p := range g.Players {
		if s, ok := g.Hidden[p]; ok {
			r.Choices[p], r.Salts[p] = s.Choice, s.Salt
			movers = append(movers, p)
		}
	}
	switch len(movers) {
	case 0:
		r.Reason = "abandoned"
	case 1:
		r.Reason, r.Winner = "timeout", movers[0]
	default:
		r.Reason = "played"
		a, b := g.Players[0], g.Players[1]
		switch {
		case rpsBeats[r.Choices[a]] == r.Choices[b]:
			r.Winner = a
		case rpsBeats[r.Choices[b]] == r.Choices[a]:
			r.Winner = b
		}
	}
	if r.Winner != "" {
		g.Scores[r.Winner]++
	}
	r.Scores = maps.Clone(g.Scores)
	g.History = append(g.History, r)
	g.Commitments, g.Hidden = map[string]string{}, map[string]rpsSecret{}
	events := []Event{{Name: domain.EventRPSRoundReveal, Data: r.view(g.Players)}}
	switch {
	case r.Reason == "abandoned":
		g.end(Outcome{Done: true, Reason: "abandoned"})
	case r.Winner != "" && g.Scores[r.Winner] >= g.target():
		timedOut := slices.ContainsFunc(g.History, func(h rpsReveal) bool { return h.Reason == "timeout" })
		g.end(Outcome{Done: true, Winner: r.Winner, Reason: "score", Flawless: g.target() >= 2 && g.Scores[g.opponent(r.Winner)] == 0,
			TimedOut: timedOut})
	default:
		events = append(events, g.startRound(g.Round+1, now))
	}
	return events
}

// opponent is the other player of two.
func (g *rpsGame) opponent(player string) string {
	if g.Players[0] == player {
		return g.Players[1]
	}
	return g.Players[0]
}

// target is the number of decisive rounds that wins the game.
func (g *rpsGame) target() int { return (g.Rounds + 1) / 2 }

func (g *rpsGame) end(o Outcome) {
	g.Result, g.RoundEnd = o, time.Time{}
}

// Resign ends the game in the other player's favour. A choice already made
// in the current round is discarded unrevealed. Errors: GAME_NOT_ACTIVE,
// NOT_A_PLAYER.
func (g *rpsGame) Resign(player string, now time.Time) ([]Event, error) {
	if g.Result.Done {
		return nil, notActive()
	}
	seat, err := seatOf(g.Players, player)
	if err != nil {
		return nil, err
	}
	winner := g.Players[1-seat]
	g.Hidden = map[string]rpsSecret{} // never to be revealed
	g.end(Outcome{Done: true, Winner: winner, Reason: "resign"})
	return []Event{{Name: domain.EventRPSResign, Data: RPSResign{Round: g.Round, UserID: player, WinnerID: winner}}}, nil
}

// Public is the state everyone may see: the current round's commitments and
// who has chosen, never a choice before its round is revealed.
func (g *rpsGame) Public(now time.Time) View {
	phase := "choosing"
	if g.Result.Done {
		phase = "finished"
	}
	submitted := make(map[string]bool, len(g.Players))
	for _, p := range g.Players {
		_, submitted[p] = g.Commitments[p]
	}
	history := make([]RPSRound, len(g.History))
	for i, r := range g.History {
		history[i] = r.view(g.Players)
	}
	commitments := maps.Clone(g.Commitments)
	if commitments == nil {
		commitments = map[string]string{}
	}
	return &RPSView{
		ViewBase: ViewBase{
			Players: slices.Clone(g.Players),
			Round:   Round{Number: g.Round, Phase: phase, Deadline: timeString(g.RoundEnd)},
			Timer:   timer(g.RoundEnd, now),
			Scores:  maps.Clone(g.Scores),
			Outcome: outcomeView(g.Result),
			Berserk: maps.Clone(g.Halved),
		},
		History:      history,
		Submitted:    submitted,
		Commitments:  commitments,
		Rounds:       g.Rounds,
		RoundSeconds: g.RoundSeconds,
		WinsNeeded:   g.target(),
	}
}
