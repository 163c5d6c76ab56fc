package rules

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"wager/domain"
)

// View is a game's state as everyone may see it (GET /games/:id/state,
// the joined frame of a room): one struct per game type, sharing Base.
type View interface {
	Base() *ViewBase
	// Record is what a finished game's metadata shows as its history:
	// the revealed rounds or the moves.
	Record() any
	// Apply takes in one of the game type's events, as stored (its name
	// and JSON data): the view of a game followed by the game's later
	// events, in order, is the game's Public view at the last of them but
	// for the timer's remaining time, which only a clock knows. An event
	// of another kind changes nothing; data that does not decode is an
	// error, and changes nothing either.
	Apply(name domain.EventName, data json.RawMessage) error
}

// ViewHeader names the game a view belongs to; the game service fills it.
type ViewHeader struct {
	GameID   string `json:"gameId"`
	GameType string `json:"gameType" enum:"connect4,rps"`
	Status   string `json:"status" enum:"waiting,active,completed,cancelled" doc:"waiting, active, completed or cancelled"`
	Seq      int    `json:"seq" doc:"the seq of the game's last event that the view includes"`
}

// ViewBase is the part of every game type's view that has one meaning for
// all of them.
type ViewBase struct {
	ViewHeader
	Players []string       `json:"players" doc:"user ids in seat order"`
	Round   Round          `json:"round"`
	Timer   Timer          `json:"timer"`
	Scores  map[string]int `json:"scores" doc:"by user id"`
	Outcome *ViewOutcome   `json:"outcome" doc:"null while the game runs"`
	// Berserk is the seconds per round or turn of the players who went
	// berserk (an arena's choice), by user id.
	Berserk map[string]int `json:"berserk,omitempty" doc:"the seconds per round or turn of the players who went berserk in an arena game, by user id; absent when none did"`
}

// berserk takes in game:berserk; the deadline is a turn's that moved
// (Connect Four), when move is set.
func (b *ViewBase) berserk(name domain.EventName, data json.RawMessage, move bool) error {
	var d Berserked
	if err := decode(name, data, &d); err != nil {
		return err
	}
	if b.Berserk == nil {
		b.Berserk = map[string]int{}
	}
	b.Berserk[d.UserID] = d.Seconds
	if move {
		b.setDeadline(d.Deadline)
	}
	return nil
}

// Base returns the shared part of the view.
func (b *ViewBase) Base() *ViewBase { return b }

// SetDeadline is a running round's or turn's new deadline (its time given
// again after an outage: game:resumed).
func (b *ViewBase) SetDeadline(t time.Time) {
	b.Round.Deadline = timeString(t)
	b.Timer.Deadline = b.Round.Deadline
}

// setDeadline is a deadline as an event carries it (nil: none).
func (b *ViewBase) setDeadline(d *string) {
	b.Round.Deadline, b.Timer.Deadline = d, d
	if d == nil {
		b.Timer.RemainingMs = 0
	}
}

// finish is the end of the game: no round runs any more.
func (b *ViewBase) finish(winner, reason string) {
	b.Outcome = &ViewOutcome{WinnerID: optional(winner), Reason: reason}
	b.Round.Phase = "finished"
	b.setDeadline(nil)
}

// decode reads an event's data into v, naming the event on failure.
func decode(name domain.EventName, data json.RawMessage, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("rules: decode the data of %s: %w", name, err)
	}
	return nil
}

// Round is the current round (rps) or move (Connect Four).
type Round struct {
	Number   int     `json:"number"`
	Phase    string  `json:"phase" enum:"choosing,playing,finished" doc:"choosing (rps), playing (connect4) or finished"`
	Deadline *string `json:"deadline" doc:"when the round or turn times out; null once the game is over"`
}

// Timer is the running round's or turn's clock.
type Timer struct {
	Deadline    *string `json:"deadline"`
	RemainingMs int64   `json:"remainingMs"`
}

// ViewOutcome is how a finished game ended.
type ViewOutcome struct {
	WinnerID *string `json:"winnerId" doc:"null for a draw"`
	Reason   string  `json:"reason" enum:"score,resign,timeout,abandoned,connect4,board-full" doc:"score, resign, timeout, abandoned (rps: nobody chose in a round), connect4 (four in a row) or board-full (a draw)"`
}

func outcomeView(o Outcome) *ViewOutcome {
	if !o.Done {
		return nil
	}
	return &ViewOutcome{WinnerID: optional(o.Winner), Reason: o.Reason}
}

// RPSView is the view of a rock, paper, scissors game.
type RPSView struct {
	ViewBase
	History      []RPSRound        `json:"history" doc:"revealed rounds, oldest first"`
	Submitted    map[string]bool   `json:"submitted" doc:"by user id: whether they chose in the current round"`
	Commitments  map[string]string `json:"commitments" doc:"the current round's commitments by user id"`
	Rounds       int               `json:"rounds"`
	RoundSeconds int               `json:"roundSeconds"`
	WinsNeeded   int               `json:"winsNeeded"`
}

// Record returns the revealed rounds.
func (v *RPSView) Record() any { return v.History }

// Apply takes in an rps event (see View).
func (v *RPSView) Apply(name domain.EventName, data json.RawMessage) error {
	switch name {
	case domain.EventBerserk:
		return v.berserk(name, data, false)
	case domain.EventRPSRoundStart:
		var d RPSRoundStart
		if err := decode(name, data, &d); err != nil {
			return err
		}
		v.Round.Number, v.Round.Phase, v.RoundSeconds = d.Round, "choosing", d.RoundSeconds
		v.setDeadline(d.Deadline)
		v.clearChoices()
	case domain.EventRPSRoundSubmitted:
		var d RPSSubmitted
		if err := decode(name, data, &d); err != nil {
			return err
		}
		if v.Submitted == nil {
			v.Submitted = map[string]bool{}
		}
		if v.Commitments == nil {
			v.Commitments = map[string]string{}
		}
		v.Submitted[d.UserID], v.Commitments[d.UserID] = true, d.Commitment
	case domain.EventRPSRoundReveal:
		var d RPSRound
		if err := decode(name, data, &d); err != nil {
			return err
		}
		v.History = append(v.History, d)
		v.Scores = maps.Clone(d.Scores)
		v.clearChoices()
		switch {
		case d.Reason == "abandoned":
			v.finish("", "abandoned")
		case d.WinnerID != nil && d.Scores[*d.WinnerID] >= v.WinsNeeded:
			v.finish(*d.WinnerID, "score")
		}
	case domain.EventRPSResign:
		var d RPSResign
		if err := decode(name, data, &d); err != nil {
			return err
		}
		v.finish(d.WinnerID, "resign")
	}
	return nil
}

// clearChoices starts a round's choosing afresh: nobody has chosen.
func (v *RPSView) clearChoices() {
	v.Submitted = make(map[string]bool, len(v.Players))
	for _, p := range v.Players {
		v.Submitted[p] = false
	}
	v.Commitments = map[string]string{}
}

// RPSRound is a revealed round: the data of game:rps:round:reveal and an
// entry of the history. A player who did not choose has null choice and
// salt.
type RPSRound struct {
	Round       int                `json:"round"`
	Choices     map[string]*string `json:"choices"`
	Salts       map[string]*string `json:"salts"`
	Commitments map[string]string  `json:"commitments"`
	WinnerID    *string            `json:"winnerId" doc:"null for a drawn round"`
	Reason      string             `json:"reason" enum:"played,timeout,abandoned" doc:"played, timeout or abandoned"`
	Scores      map[string]int     `json:"scores" doc:"after the round"`
}

// RPSRoundStart is the data of game:rps:round:start.
type RPSRoundStart struct {
	Round        int     `json:"round"`
	Deadline     *string `json:"deadline"`
	RoundSeconds int     `json:"roundSeconds"`
}

// RPSSubmitted is the data of game:rps:round:submitted: who chose, and the
// commitment to the choice, never the choice.
type RPSSubmitted struct {
	Round      int    `json:"round"`
	UserID     string `json:"userId"`
	Commitment string `json:"commitment"`
}

// RPSResign is the data of game:rps:resign.
type RPSResign struct {
	Round    int    `json:"round"`
	UserID   string `json:"userId"`
	WinnerID string `json:"winnerId"`
}

// C4View is the view of a Connect Four game.
type C4View struct {
	ViewBase
	History     []C4Move   `json:"history" doc:"every move, oldest first"`
	Board       [][]string `json:"board" doc:"rows top to bottom of columns left to right: the user id of the piece, or empty"`
	Turn        *string    `json:"turn" doc:"the user on turn; null once the game is over"`
	Rows        int        `json:"rows"`
	Columns     int        `json:"columns"`
	TurnSeconds int        `json:"turnSeconds"`
	Line        *[][2]int  `json:"line" doc:"the winning cells [row, column], or null"`
}

// Record returns the moves.
func (v *C4View) Record() any { return v.History }

// winLine is a winning line as a view holds it: a copy, or nil (null)
// when there is none.
func winLine(cells [][2]int) *[][2]int {
	if cells == nil {
		return nil
	}
	c := slices.Clone(cells)
	return &c
}

// Apply takes in a Connect Four event (see View).
func (v *C4View) Apply(name domain.EventName, data json.RawMessage) error {
	switch name {
	case domain.EventBerserk:
		return v.berserk(name, data, true)
	case domain.EventConnect4Start:
		var d C4Start
		if err := decode(name, data, &d); err != nil {
			return err
		}
		v.Rows, v.Columns, v.TurnSeconds, v.Turn = d.Rows, d.Columns, d.TurnSeconds, &d.Turn
		v.Board = make([][]string, d.Rows)
		for r := range v.Board {
			v.Board[r] = make([]string, d.Columns)
		}
		v.History, v.Line = []C4Move{}, nil
		v.Round.Number, v.Round.Phase = 1, "playing"
		v.setDeadline(d.Deadline)
	case domain.EventConnect4Move:
		var d C4Moved
		if err := decode(name, data, &d); err != nil {
			return err
		}
		if d.Row < 0 || d.Row >= len(v.Board) || d.Column < 0 || d.Column >= len(v.Board[d.Row]) {
			return fmt.Errorf("rules: %s at row %d, column %d is off the board", name, d.Row, d.Column)
		}
		v.Board[d.Row][d.Column] = d.UserID
		v.History = append(v.History, C4Move{MoveNumber: d.MoveNumber, UserID: d.UserID, Column: d.Column, Row: d.Row})
		v.Round.Number = len(v.History) + 1
		v.Turn = d.Turn
		v.setDeadline(d.Deadline)
		switch {
		case d.Line != nil:
			v.Line = winLine(d.Line)
			v.finish(d.UserID, "connect4")
		case d.Turn == nil:
			v.finish("", "board-full")
		}
	case domain.EventConnect4Timeout, domain.EventConnect4Resign:
		var d C4Forfeit
		if err := decode(name, data, &d); err != nil {
			return err
		}
		reason := "resign"
		if name == domain.EventConnect4Timeout {
			reason = "timeout"
		}
		v.Turn = nil
		v.finish(d.WinnerID, reason)
	}
	return nil
}

// finish ends a Connect Four game: the winner scores 1, and the round
// number stays at the last move.
func (v *C4View) finish(winner, reason string) {
	v.ViewBase.finish(winner, reason)
	v.Round.Number = len(v.History)
	if winner != "" {
		v.Scores = maps.Clone(v.Scores)
		if v.Scores == nil {
			v.Scores = map[string]int{}
		}
		v.Scores[winner] = 1
	}
}

// C4Move is one move of a Connect Four game's history.
type C4Move struct {
	MoveNumber int    `json:"moveNumber"`
	UserID     string `json:"userId"`
	Column     int    `json:"column"`
	Row        int    `json:"row"`
}

// C4Start is the data of game:connect4:start.
type C4Start struct {
	Turn        string  `json:"turn"`
	Deadline    *string `json:"deadline"`
	TurnSeconds int     `json:"turnSeconds"`
	Rows        int     `json:"rows"`
	Columns     int     `json:"columns"`
}

// C4Moved is the data of game:connect4:move.
type C4Moved struct {
	UserID     string   `json:"userId"`
	Column     int      `json:"column"`
	Row        int      `json:"row"`
	MoveNumber int      `json:"moveNumber"`
	Line       [][2]int `json:"line,omitempty" doc:"the winning cells, when the move won"`
	Turn       *string  `json:"turn" doc:"who moves next; null when the game is over"`
	Deadline   *string  `json:"deadline"`
}

// C4Forfeit is the data of game:connect4:timeout and game:connect4:resign:
// the player who lost the game by it, and the winner.
type C4Forfeit struct {
	UserID   string `json:"userId"`
	WinnerID string `json:"winnerId"`
}
