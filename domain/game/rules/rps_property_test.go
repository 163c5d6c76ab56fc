package rules

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"wager/domain"
)

// The property test plays thousands of random rps games against a referee
// that knows every hidden choice (it made them) and every salt (it supplies
// the random bytes), and checks after every step that:
//   - no salt of an unrevealed choice appears in the public view, an event
//     or the outcome, and a revealed salt only in its round's reveal and
//     in the public view afterwards;
//   - no choice word appears anywhere except in reveals: the public view
//     holds exactly as many as the revealed rounds had movers, a reveal
//     exactly its round's, every other event none;
//   - every reveal matches the referee's own account (choices, salts,
//     commitments that verify with Commitment, round winner, scores);
//   - the outcome follows the rules: first to (rounds+1)/2, the other player
//     on resign, a draw when a round is abandoned;
//   - refused actions change nothing, and the game ends within maxSteps.

const (
	propertyGames = 5000
	maxSteps      = 2000
)

var choiceWords = []string{"rock", "paper", "scissors"}

// refWins is the referee's own table of who beats whom.
var refWins = map[[2]string]bool{{"rock", "scissors"}: true, {"scissors", "paper"}: true, {"paper", "rock"}: true}

// secret is a hidden move as the referee knows it.
type secret struct {
	player, choice, salt, commitment string
	round                            int
	revealed                         bool
}

// propGame is one random game and its referee.
type propGame struct {
	rng     *rand.Rand
	salts   *recorder
	wrap    func(State) State // lets a test plant a leak; identity otherwise
	st      State
	players []string
	gameID  string
	rounds  int
	secs    int
	now     time.Time

	round    int
	deadline time.Time
	scores   map[string]int
	pending  map[string]*secret // the current round's moves
	secrets  []*secret
	revealed int // choices shown by the revealed rounds
	outcome  Outcome
	timedOut bool // a round was lost on time
	log      []string
}

func newPropGame(seed uint64, wrap func(State) State) (*propGame, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &propGame{rng: rng, salts: &recorder{r: seeded(seed)}, wrap: wrap, players: []string{"ann", "bob"},
		gameID: fmt.Sprintf("g%d", seed), rounds: []int{1, 3, 5, 7, 9}[rng.IntN(5)], secs: 3 + rng.IntN(118),
		now: t0.Add(time.Duration(rng.Int64N(int64(time.Hour)))), scores: map[string]int{"ann": 0, "bob": 0}}
	settings := fmt.Sprintf(`{"rounds": %d, "roundSeconds": %d}`, p.rounds, p.secs)
	p.logf("start %s", settings)
	st, events, err := RPS{}.Start(p.gameID, p.players, json.RawMessage(settings), p.now)
	if err != nil {
		return nil, err
	}
	p.st = wrap(st)
	if events, err = p.expectStart(events); err != nil {
		return nil, err
	}
	if len(events) != 0 {
		return nil, fmt.Errorf("start: extra events %q", names(events))
	}
	return p, p.check(nil)
}

func (p *propGame) logf(format string, args ...any) {
	p.log = append(p.log, fmt.Sprintf(format, args...))
}

// play runs random steps until the game ends, then checks that it stays over.
func (p *propGame) play() error {
	for steps := 0; !p.outcome.Done; steps++ {
		if steps == maxSteps {
			return fmt.Errorf("the game did not end within %d steps", maxSteps)
		}
		if err := p.step(); err != nil {
			return err
		}
	}
	before, _ := p.st.MarshalJSON()
	if _, err := p.st.Move(p.players[0], json.RawMessage(`"rock"`), p.now, p.salts); domain.ErrorCode(err) != domain.CodeGameNotActive {
		return fmt.Errorf("move after the end: got %v, want GAME_NOT_ACTIVE", err)
	}
	if _, err := p.st.Resign(p.players[1], p.now); domain.ErrorCode(err) != domain.CodeGameNotActive {
		return fmt.Errorf("resign after the end: got %v, want GAME_NOT_ACTIVE", err)
	}
	if e := p.st.Expire(p.now.Add(time.Hour)); e != nil {
		return fmt.Errorf("expire after the end: got %q, want nil", names(e))
	}
	return p.unchanged(before)
}

// before returns a random time from now up to (not including) the deadline.
func (p *propGame) beforeDeadline() time.Time {
	left := p.deadline.Sub(p.now)
	if left <= 1 {
		return p.now
	}
	return p.now.Add(time.Duration(p.rng.Int64N(int64(left))))
}

func (p *propGame) step() error {
	if p.rng.IntN(2) == 0 { // the service loads the state for every action
		raw, err := p.st.MarshalJSON()
		if err != nil {
			return err
		}
		st, err := RPS{}.Load(raw)
		if err != nil {
			return fmt.Errorf("load: %v", err)
		}
		if again, _ := st.MarshalJSON(); string(again) != string(raw) {
			return fmt.Errorf("marshal/load round trip:\n got %s\nwant %s", again, raw)
		}
		p.st = p.wrap(st)
	}
	before, _ := p.st.MarshalJSON()
	player := p.players[p.rng.IntN(2)]
	switch x := p.rng.IntN(100); {
	case x < 66: // a move, or a second move in the round
		p.now = p.beforeDeadline()
		choice := choiceWords[p.rng.IntN(3)]
		p.logf("%s plays %s in round %d at %v", player, choice, p.round, p.now)
		p.salts.buf = nil
		events, err := p.st.Move(player, json.RawMessage(`"`+choice+`"`), p.now, p.salts)
		if p.pending[player] != nil {
			if domain.ErrorCode(err) != domain.CodeAlreadyMoved || events != nil {
				return fmt.Errorf("second move: got %q, %v; want ALREADY_MOVED", names(events), err)
			}
			return p.all(p.unchanged(before), p.check(nil))
		}
		if err != nil {
			return fmt.Errorf("move: %v", err)
		}
		return p.all(p.afterMove(player, choice, events), p.check(events))
	case x < 70: // a move that is not one
		bad := []string{`"lizard"`, `5`, `{"choice":"rock"}`, `["rock"]`, `""`}[p.rng.IntN(5)]
		p.logf("%s plays %s", player, bad)
		return p.refused(before, domain.CodeInvalidMove, func() ([]Event, error) {
			return p.st.Move(player, json.RawMessage(bad), p.now, p.salts)
		})
	case x < 73: // too late
		late := p.deadline.Add(time.Duration(p.rng.Int64N(int64(time.Minute))))
		p.logf("%s plays late at %v", player, late)
		return p.refused(before, domain.CodeInvalidMove, func() ([]Event, error) {
			return p.st.Move(player, json.RawMessage(`"paper"`), late, p.salts)
		})
	case x < 75: // not a player
		p.logf("cy plays")
		return p.refused(before, domain.CodeNotAPlayer, func() ([]Event, error) {
			return p.st.Move("cy", json.RawMessage(`"paper"`), p.now, p.salts)
		})
	case x < 85: // the expiry job runs early
		p.now = p.beforeDeadline()
		p.logf("expire early at %v", p.now)
		if events := p.st.Expire(p.now); events != nil {
			return fmt.Errorf("expire before the deadline: got %q, want nil", names(events))
		}
		return p.all(p.unchanged(before), p.check(nil))
	case x < 97: // the round times out (12%)
		p.now = p.deadline.Add(time.Duration(p.rng.Int64N(int64(3 * time.Second))))
		p.logf("expire at %v (deadline %v)", p.now, p.deadline)
		events := p.st.Expire(p.now)
		return p.all(p.afterClose(events), p.check(events))
	default:
		p.logf("%s resigns", player)
		events, err := p.st.Resign(player, p.now)
		if err != nil {
			return fmt.Errorf("resign: %v", err)
		}
		winner := p.players[0]
		if player == winner {
			winner = p.players[1]
		}
		p.outcome, p.deadline = Outcome{Done: true, Winner: winner, Reason: "resign"}, time.Time{}
		if len(events) != 1 || events[0].Name != "game:rps:resign" {
			return fmt.Errorf("resign: events %q, want [game:rps:resign]", names(events))
		}
		return p.check(events)
	}
}

func (p *propGame) all(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *propGame) refused(before []byte, want string, act func() ([]Event, error)) error {
	events, err := act()
	if domain.ErrorCode(err) != want || events != nil {
		return fmt.Errorf("got %q, %v; want %s and no events", names(events), err, want)
	}
	return p.all(p.unchanged(before), p.check(nil))
}

func (p *propGame) unchanged(before []byte) error {
	if after, _ := p.st.MarshalJSON(); string(after) != string(before) {
		return fmt.Errorf("a refused or early action changed the state:\n got %s\nwant %s", after, before)
	}
	return nil
}

// afterMove checks a successful move's events against the referee.
func (p *propGame) afterMove(player, choice string, events []Event) error {
	if len(p.salts.buf) != 16 {
		return fmt.Errorf("a move read %d random bytes, want 16", len(p.salts.buf))
	}
	s := &secret{player: player, choice: choice, salt: p.salts.salt(), round: p.round}
	s.commitment = Commitment(p.gameID, p.round, player, choice, s.salt)
	p.pending[player] = s
	p.secrets = append(p.secrets, s)
	if len(events) == 0 || events[0].Name != "game:rps:round:submitted" {
		return fmt.Errorf("move: events %q, want game:rps:round:submitted first", names(events))
	}
	want := map[string]any{"round": float64(p.round), "userId": player, "commitment": s.commitment}
	if got := jsonMap(events[0].Data); !reflect.DeepEqual(got, want) {
		return fmt.Errorf("submitted event:\n got %v\nwant %v", got, want)
	}
	if len(p.pending) < 2 {
		if len(events) != 1 {
			return fmt.Errorf("first move of a round: events %q, want only submitted", names(events))
		}
		return nil
	}
	return p.afterClose(events[1:])
}

// afterClose checks the reveal of the current round (and the next round's
// start) against the referee's own scoring, and updates the referee.
func (p *propGame) afterClose(events []Event) error {
	if len(events) == 0 || events[0].Name != "game:rps:round:reveal" {
		return fmt.Errorf("closing round %d: events %q, want a reveal first", p.round, names(events))
	}
	choices, salts, commits := map[string]any{}, map[string]any{}, map[string]any{}
	var movers []string
	for _, pl := range p.players {
		choices[pl], salts[pl] = nil, nil
		if s := p.pending[pl]; s != nil {
			choices[pl], salts[pl], commits[pl] = s.choice, s.salt, s.commitment
			movers = append(movers, pl)
			s.revealed = true
			p.revealed++
		}
	}
	var winner any
	reason := "played"
	switch len(movers) {
	case 0:
		reason = "abandoned"
	case 1:
		reason, winner = "timeout", movers[0]
	case 2:
		a, b := p.pending["ann"].choice, p.pending["bob"].choice
		if refWins[[2]string{a, b}] {
			winner = "ann"
		} else if refWins[[2]string{b, a}] {
			winner = "bob"
		}
	}
	if w, ok := winner.(string); ok {
		p.scores[w]++
	}
	want := map[string]any{"round": float64(p.round), "choices": choices, "salts": salts, "commitments": commits,
		"winnerId": winner, "reason": reason, "scores": map[string]any{"ann": float64(p.scores["ann"]), "bob": float64(p.scores["bob"])}}
	got := jsonMap(events[0].Data)
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("reveal of round %d:\n got %v\nwant %v", p.round, got, want)
	}
	// Anyone can check the commitments from what the reveal shows.
	for pl, c := range got["commitments"].(map[string]any) {
		choice, _ := got["choices"].(map[string]any)[pl].(string)
		salt, _ := got["salts"].(map[string]any)[pl].(string)
		if Commitment(p.gameID, p.round, pl, choice, salt) != c {
			return fmt.Errorf("round %d: %s's commitment %v does not verify with choice %q salt %q", p.round, pl, c, choice, salt)
		}
	}
	events = events[1:]
	p.timedOut = p.timedOut || reason == "timeout"
	target := (p.rounds + 1) / 2
	switch {
	case reason == "abandoned":
		p.outcome = Outcome{Done: true, Reason: "abandoned"}
	case winner != nil && p.scores[winner.(string)] >= target:
		w := winner.(string)
		lost := 0
		for pl, n := range p.scores {
			if pl != w {
				lost = n
			}
		}
		p.outcome = Outcome{Done: true, Winner: w, Reason: "score", Flawless: target >= 2 && lost == 0, TimedOut: p.timedOut}
	default:
		p.round++
		var err error
		if events, err = p.expectStart(events); err != nil {
			return err
		}
	}
	if p.outcome.Done {
		p.deadline, p.pending = time.Time{}, nil
	}
	if len(events) != 0 {
		return fmt.Errorf("after the reveal of round %d: unexpected events %q", p.round, names(events))
	}
	return nil
}

// expectStart checks a round start event and starts the round in the referee.
func (p *propGame) expectStart(events []Event) ([]Event, error) {
	if p.round == 0 {
		p.round = 1
	}
	p.deadline, p.pending = p.now.Add(time.Duration(p.secs)*time.Second), map[string]*secret{}
	want := map[string]any{"round": float64(p.round), "deadline": p.deadline.Format(time.RFC3339Nano), "roundSeconds": float64(p.secs)}
	if len(events) == 0 || events[0].Name != "game:rps:round:start" || !reflect.DeepEqual(jsonMap(events[0].Data), want) {
		return nil, fmt.Errorf("round %d start: events %q (first %v), want game:rps:round:start %v", p.round, names(events),
			firstData(events), want)
	}
	return events[1:], nil
}

// check compares the state with the referee and looks for hidden
// information in everything public.
func (p *propGame) check(events []Event) error {
	if got := p.st.Outcome(); got != p.outcome {
		return fmt.Errorf("outcome: got %+v, want %+v", got, p.outcome)
	}
	if got := p.st.Deadline(); !got.Equal(p.deadline) {
		return fmt.Errorf("deadline: got %v, want %v", got, p.deadline)
	}
	pub := p.st.Public(p.now)
	pubJSON, err := json.Marshal(pub)
	if err != nil {
		return fmt.Errorf("public view does not marshal: %v", err)
	}
	if err := p.leaks("the public view", string(pubJSON), p.revealed, -1); err != nil {
		return err
	}
	outJSON, _ := json.Marshal(p.st.Outcome())
	if err := p.leaks("the outcome", string(outJSON), 0, 0); err != nil {
		return err
	}
	for _, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("event %s does not marshal: %v", e.Name, err)
		}
		words, round := 0, 0
		if e.Name == "game:rps:round:reveal" {
			var r struct {
				Round   int            `json:"round"`
				Choices map[string]any `json:"choices"`
			}
			_ = json.Unmarshal(data, &r)
			round = r.Round
			for _, c := range r.Choices {
				if c != nil {
					words++
				}
			}
			// A reveal may only show secrets of its own round, which the
			// referee has just revealed.
			for _, s := range p.secrets {
				if s.round == round && !s.revealed {
					return fmt.Errorf("event %s reveals round %d, which the referee has not closed: %s", e.Name, round, data)
				}
			}
		}
		if err := p.leaks("event "+string(e.Name), string(data), words, round); err != nil {
			return err
		}
	}
	// The view agrees with the referee.
	v := jsonMap(pub)
	phase := "choosing"
	if p.outcome.Done {
		phase = "finished"
	}
	if r := v["round"].(map[string]any); r["number"] != float64(p.round) || r["phase"] != phase {
		return fmt.Errorf("public round: got %v, want number %d phase %s", r, p.round, phase)
	}
	if want := map[string]any{"ann": float64(p.scores["ann"]), "bob": float64(p.scores["bob"])}; !reflect.DeepEqual(v["scores"], want) {
		return fmt.Errorf("public scores: got %v, want %v", v["scores"], want)
	}
	wantLeft := 0.0
	if !p.outcome.Done {
		wantLeft = float64(p.deadline.Sub(p.now).Milliseconds())
	}
	if left := v["timer"].(map[string]any)["remainingMs"]; left != wantLeft {
		return fmt.Errorf("public timer: remainingMs %v, want %v", left, wantLeft)
	}
	submitted, commits := map[string]any{}, map[string]any{}
	for _, pl := range p.players {
		submitted[pl] = false
		if s := p.pending[pl]; s != nil {
			submitted[pl], commits[pl] = true, s.commitment
		}
	}
	if !p.outcome.Done && (!reflect.DeepEqual(v["submitted"], submitted) || !reflect.DeepEqual(v["commitments"], commits)) {
		return fmt.Errorf("public submitted %v commitments %v, want %v and %v", v["submitted"], v["commitments"], submitted, commits)
	}
	return nil
}

// leaks fails when blob shows hidden information: a salt of a secret that is
// not revealed (or, for an event, not of the round it reveals), or another
// number of choice words than wantWords. revealRound is the round an event
// reveals (0: none), or -1 for the public view, which may show every
// revealed round.
func (p *propGame) leaks(what, blob string, wantWords, revealRound int) error {
	for _, s := range p.secrets {
		allowed := s.revealed && (revealRound == -1 || revealRound == s.round)
		if !allowed && strings.Contains(blob, s.salt) {
			return fmt.Errorf("%s shows the salt of %s's hidden round-%d choice %s: %s", what, s.player, s.round, s.choice, blob)
		}
	}
	words := 0
	for _, w := range choiceWords {
		words += strings.Count(blob, `"`+w+`"`)
	}
	if words != wantWords {
		return fmt.Errorf("%s shows %d choices, want %d (the revealed ones): %s", what, words, wantWords, blob)
	}
	return nil
}

func jsonMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func firstData(events []Event) any {
	if len(events) == 0 {
		return nil
	}
	return jsonMap(events[0].Data)
}

func playRandomGame(seed uint64, wrap func(State) State) (*propGame, error) {
	p, err := newPropGame(seed, wrap)
	if err == nil {
		err = p.play()
	}
	return p, err
}

func identity(s State) State { return s }

func TestRPSPropertyNoHiddenInformationLeaks(t *testing.T) {
	started := time.Now()
	reasons := map[string]int{}
	steps := 0
	for seed := range uint64(propertyGames) {
		p, err := playRandomGame(seed, identity)
		if err != nil {
			var tail []string
			if p != nil {
				tail = p.log
			}
			if len(tail) > 15 {
				tail = tail[len(tail)-15:]
			}
			t.Fatalf("seed %d: %v\nlast steps:\n  %s", seed, err, strings.Join(tail, "\n  "))
		}
		reasons[p.outcome.Reason]++
		steps += len(p.log)
	}
	// The random games must reach every way an rps game ends, or the
	// property says little.
	for _, r := range []string{"score", "resign", "abandoned"} {
		if reasons[r] == 0 {
			t.Errorf("no random game ended by %s: %v", r, reasons)
		}
	}
	t.Logf("%d games, %d steps, endings %v, in %v", propertyGames, steps, reasons, time.Since(started))
}

// leaky wraps a State and plants one leak, to show that the property test
// catches it.
type leaky struct {
	State
	kind string
	last *string // the last choice moved, shared across Loads
}

func (l leaky) Move(player string, move json.RawMessage, now time.Time, rand io.Reader) ([]Event, error) {
	events, err := l.State.Move(player, move, now, rand)
	if err == nil {
		var c string
		_ = json.Unmarshal(move, &c)
		*l.last = c
		if l.kind == "submitted event" {
			events[0].Data = struct {
				RPSSubmitted
				Choice string `json:"choice"`
			}{events[0].Data.(RPSSubmitted), c}
		}
	}
	return events, err
}

func (l leaky) Resign(player string, now time.Time) ([]Event, error) {
	events, err := l.State.Resign(player, now)
	if err == nil && l.kind == "resign event" {
		events[0].Data = struct {
			RPSResign
			Pending string `json:"pending"`
		}{events[0].Data.(RPSResign), *l.last}
	}
	return events, err
}

// leakyView is a view with something planted in it.
type leakyView struct {
	*RPSView
	LastChoice string `json:"lastChoice,omitempty"`
	Debug      string `json:"debug,omitempty"`
}

func (l leaky) Public(now time.Time) View {
	v := leakyView{RPSView: l.State.Public(now).(*RPSView)}
	switch l.kind {
	case "public choice":
		if v.Submitted["ann"] || v.Submitted["bob"] {
			v.LastChoice = *l.last
		}
	case "public salts":
		raw, _ := l.State.MarshalJSON()
		var all map[string]json.RawMessage
		_ = json.Unmarshal(raw, &all)
		if string(all["hidden"]) != "{}" {
			// Only the salts, not the choices: the salt check must catch it alone.
			v.Debug = strings.NewReplacer(`"rock"`, `"?"`, `"paper"`, `"?"`, `"scissors"`, `"?"`).Replace(string(all["hidden"]))
		}
	case "history early":
		if v.Submitted["ann"] {
			v.History = append(v.History, RPSRound{Round: v.Round.Number, Choices: map[string]*string{"ann": l.last}})
		}
	}
	return v
}

func TestRPSPropertyCatchesLeaks(t *testing.T) {
	for _, kind := range []string{"public choice", "public salts", "submitted event", "resign event", "history early"} {
		t.Run(kind, func(t *testing.T) {
			last := new(string)
			wrap := func(s State) State { return leaky{State: s, kind: kind, last: last} }
			for seed := range uint64(200) {
				if _, err := playRandomGame(seed, wrap); err != nil {
					t.Logf("caught at seed %d: %.200s", seed, err)
					return
				}
			}
			t.Errorf("200 games with a %s leak passed the property test; want a failure", kind)
		})
	}
}
