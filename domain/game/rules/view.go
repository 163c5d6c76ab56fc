package rules

// View is a game's state as everyone may see it (GET /games/:id/state,
// the joined frame of a room): one struct per game type, sharing Base.
type View interface {
	Base() *ViewBase
	// Record is what a finished game's metadata shows as its history:
	// the revealed rounds or the moves.
	Record() any
}

// ViewHeader names the game a view belongs to; the game service fills it.
type ViewHeader struct {
	GameID   string `json:"gameId"`
	GameType string `json:"gameType"`
	Status   string `json:"status" doc:"waiting, active, completed or cancelled"`
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
}

// Base returns the shared part of the view.
func (b *ViewBase) Base() *ViewBase { return b }

// Round is the current round (rps) or move (Connect Four).
type Round struct {
	Number   int     `json:"number"`
	Phase    string  `json:"phase" doc:"choosing (rps), playing (connect4) or finished"`
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
	Reason   string  `json:"reason"`
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

// RPSRound is a revealed round: the data of game:rps:round:reveal and an
// entry of the history. A player who did not choose has null choice and
// salt.
type RPSRound struct {
	Round       int                `json:"round"`
	Choices     map[string]*string `json:"choices"`
	Salts       map[string]*string `json:"salts"`
	Commitments map[string]string  `json:"commitments"`
	WinnerID    *string            `json:"winnerId" doc:"null for a drawn round"`
	Reason      string             `json:"reason" doc:"played, timeout or abandoned"`
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
	Line        [][2]int   `json:"line" doc:"the winning cells [row, column], or null"`
}

// Record returns the moves.
func (v *C4View) Record() any { return v.History }

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
