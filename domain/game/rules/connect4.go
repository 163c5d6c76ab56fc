package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"time"

	"wager/domain"
)

// Board size of Connect Four.
const (
	C4Rows    = 6 // rows of the board, 0 at the top
	C4Columns = 7 // columns of the board, 0 at the left
)

// ConnectFour is Connect Four: 7 columns by 6 rows, players drop pieces in
// turn (the first seat first), four in a row in any direction wins, a full
// board is a draw, and the player on turn who lets the turn timer run out
// loses. Row 0 is the top row, row 5 the bottom one.
type ConnectFour struct{}

var c4Settings = []intSetting{
	{name: "turnSeconds", def: 30, min: 5, max: 300, help: "a whole number of seconds from 5 to 300"},
}

// Info describes Connect Four.
func (ConnectFour) Info() Info {
	d, h := defaults(c4Settings)
	return Info{GameType: "connect4", Name: "Connect Four",
		Description: "Players take turns dropping a piece into one of 7 columns of a 6-row board; " +
			"the first to line up four (across, down or diagonally) wins, a full board is a draw. " +
			"A player who lets the turn timer run out loses.",
		MinPlayers: 2, MaxPlayers: 2, Settings: d, SettingsHelp: h}
}

// ParseSettings validates turnSeconds and applies the default.
// VALIDATION_ERROR naming settings.turnSeconds or an unknown setting.
func (ConnectFour) ParseSettings(raw json.RawMessage) (json.RawMessage, error) {
	norm, _, err := parseIntSettings(raw, "connect4", c4Settings)
	return norm, err
}

// Start gives the first turn to players[0] at now. VALIDATION_ERROR for bad
// settings or players.
func (ConnectFour) Start(gameID string, players []string, settings json.RawMessage, now time.Time) (State, []Event, error) {
	if err := checkPlayers(players); err != nil {
		return nil, nil, err
	}
	_, v, err := parseIntSettings(settings, "connect4", c4Settings)
	if err != nil {
		return nil, nil, err
	}
	g := &c4Game{GameID: gameID, Players: slices.Clone(players), TurnSeconds: v["turnSeconds"], Moves: []c4Move{}}
	g.TurnEnd = now.Add(g.turnLength(0))
	return g, []Event{{Name: domain.EventConnect4Start, Data: C4Start{Turn: players[0], Deadline: timeString(g.TurnEnd),
		TurnSeconds: g.TurnSeconds, Rows: C4Rows, Columns: C4Columns}}}, nil
}

// Load decodes a Connect Four state; a plain error when data is not one.
func (ConnectFour) Load(data []byte) (State, error) {
	var g c4Game
	if err := json.Unmarshal(data, (*c4Stored)(&g)); err != nil {
		return nil, loadError("connect4", err)
	}
	if len(g.Players) != 2 || g.TurnSeconds < 1 || g.Turn < 0 || g.Turn > 1 {
		return nil, loadError("connect4", errBadC4)
	}
	if g.Moves == nil {
		g.Moves = []c4Move{}
	}
	return &g, nil
}

var errBadC4 = errors.New("missing players, turn or turnSeconds")

// c4Game is the state of one Connect Four game; all of it is public.
type c4Game struct {
	GameID      string                    `json:"gameId"`
	Players     []string                  `json:"players"`
	TurnSeconds int                       `json:"turnSeconds"`
	Board       [C4Rows][C4Columns]string `json:"board"` // user id or ""
	Turn        int                       `json:"turn"`  // seat on turn
	TurnEnd     time.Time                 `json:"deadline"`
	Moves       []c4Move                  `json:"moves"`
	Line        [][2]int                  `json:"line,omitempty"` // the winning cells [row, column]
	Result      Outcome                   `json:"outcome"`
	// Halved is the seconds per turn of the players who went berserk.
	Halved map[string]int `json:"berserk,omitempty"`
}

// c4Stored is c4Game without its methods, so that it marshals as a plain struct.
type c4Stored c4Game

type c4Move struct {
	UserID string `json:"userId"`
	Column int    `json:"column"`
	Row    int    `json:"row"`
}

// MarshalJSON returns the full state, for persistence.
func (g *c4Game) MarshalJSON() ([]byte, error) { return json.Marshal((*c4Stored)(g)) }

// Clone copies the slices; the board is an array, copied with the rest.
func (g *c4Game) Clone() State {
	c := *g
	c.Players, c.Moves, c.Line, c.Halved = slices.Clone(g.Players), slices.Clone(g.Moves), slices.Clone(g.Line), maps.Clone(g.Halved)
	return &c
}

// Outcome is how the game ended, or the zero Outcome while it runs.
func (g *c4Game) Outcome() Outcome { return g.Result }

// Deadline is the end of the current turn, zero once the game is over.
func (g *c4Game) Deadline() time.Time { return g.TurnEnd }

// turnLength is the time of a turn of the player in seat.
func (g *c4Game) turnLength(seat int) time.Duration {
	if s, ok := g.Halved[g.Players[seat]]; ok {
		return time.Duration(s) * time.Second
	}
	return time.Duration(g.TurnSeconds) * time.Second
}

// Berserk halves the player's turns; their turn running now ends that much
// sooner.
func (g *c4Game) Berserk(player string, now time.Time) ([]Event, error) {
	if g.Result.Done {
		return nil, notActive()
	}
	seat, err := seatOf(g.Players, player)
	if err != nil {
		return nil, err
	}
	if _, again := g.Halved[player]; again || g.Played(player) > 0 {
		return nil, berserkRefusal(again)
	}
	half := halved(g.TurnSeconds)
	if half >= g.TurnSeconds {
		return nil, berserkTooShort(g.TurnSeconds)
	}
	end := g.TurnEnd
	if g.Turn == seat {
		end = end.Add(-time.Duration(g.TurnSeconds-half) * time.Second)
		if !now.Before(end) {
			return nil, errBerserkTooLate
		}
	}
	if g.Halved == nil {
		g.Halved = map[string]int{}
	}
	g.Halved[player], g.TurnEnd = half, end
	return []Event{{Name: domain.EventBerserk, Data: Berserked{UserID: player, Seconds: g.Halved[player], Deadline: timeString(g.TurnEnd)}}}, nil
}

// Berserked reports whether the player went berserk.
func (g *c4Game) Berserked(player string) bool {
	_, ok := g.Halved[player]
	return ok
}

// RanOutOfTime reports whether the game ended with the player's turn run
// out.
func (g *c4Game) RanOutOfTime(player string) bool {
	return g.Result.Reason == "timeout" && g.Result.Winner != "" && g.Result.Winner != player && slices.Contains(g.Players, player)
}

// Played is the player's moves.
func (g *c4Game) Played(player string) int {
	n := 0
	for _, m := range g.Moves {
		if m.UserID == player {
			n++
		}
	}
	return n
}

// parseColumn accepts {"column": n} or a bare integer n.
func parseColumn(move json.RawMessage) (int, bool) {
	move = bytes.TrimSpace(move)
	if len(move) > 0 && move[0] == '{' {
		var m struct {
			Column *int `json:"column"`
		}
		d := json.NewDecoder(bytes.NewReader(move))
		d.DisallowUnknownFields()
		if d.Decode(&m) != nil || m.Column == nil || d.More() {
			return 0, false
		}
		return *m.Column, true
	}
	var c int
	if json.Unmarshal(move, &c) != nil {
		return 0, false
	}
	return c, true
}

// The messages of two refused drops, which pages say in their own words.
const (
	ColumnFull = "that column is full"
	TurnTimeUp = "the time for your turn is up"
)

// Move drops the player's piece into a column. Errors: GAME_NOT_ACTIVE,
// NOT_A_PLAYER, INVALID_MOVE (not {"column": 0-6} or an integer, a full
// column, or the turn's time is up), NOT_YOUR_TURN.
func (g *c4Game) Move(player string, move json.RawMessage, now time.Time, _ io.Reader) ([]Event, error) {
	if g.Result.Done {
		return nil, notActive()
	}
	seat, err := seatOf(g.Players, player)
	if err != nil {
		return nil, err
	}
	col, ok := parseColumn(move)
	if !ok {
		return nil, domain.Errorf(domain.CodeInvalidMove, `a connect4 move is {"column": 0-6}`)
	}
	if seat != g.Turn {
		return nil, domain.Errorf(domain.CodeNotYourTurn, "it is the other player's turn")
	}
	if !now.Before(g.TurnEnd) {
		// The timer decides, not how soon the expiry job runs.
		return nil, domain.Errorf(domain.CodeInvalidMove, "%s", TurnTimeUp)
	}
	if col < 0 || col >= C4Columns {
		return nil, domain.Errorf(domain.CodeInvalidMove, "column must be 0 to %d", C4Columns-1)
	}
	row := -1
	for r := C4Rows - 1; r >= 0; r-- {
		if g.Board[r][col] == "" {
			row = r
			break
		}
	}
	if row < 0 {
		return nil, domain.Errorf(domain.CodeInvalidMove, "%s", ColumnFull)
	}
	g.Board[row][col] = player
	g.Moves = append(g.Moves, c4Move{UserID: player, Column: col, Row: row})
	data := C4Moved{UserID: player, Column: col, Row: row, MoveNumber: len(g.Moves)}
	if line := g.lineThrough(row, col); line != nil {
		g.Line = line
		g.end(Outcome{Done: true, Winner: player, Reason: "connect4"})
		data.Line = line
	} else if len(g.Moves) == C4Rows*C4Columns {
		g.end(Outcome{Done: true, Reason: "board-full"})
	} else {
		g.Turn, g.TurnEnd = 1-seat, now.Add(g.turnLength(1-seat))
	}
	data.Turn, data.Deadline = g.onTurn(), timeString(g.TurnEnd)
	return []Event{{Name: domain.EventConnect4Move, Data: data}}, nil
}

// lineThrough returns four or more cells in a row through (row, col) that
// hold its owner's pieces, or nil.
func (g *c4Game) lineThrough(row, col int) [][2]int {
	who := g.Board[row][col]
	for _, d := range [][2]int{{0, 1}, {1, 0}, {1, 1}, {1, -1}} {
		line := [][2]int{{row, col}}
		for _, sign := range []int{1, -1} {
			r, c := row+sign*d[0], col+sign*d[1]
			for r >= 0 && r < C4Rows && c >= 0 && c < C4Columns && g.Board[r][c] == who {
				line = append(line, [2]int{r, c})
				r, c = r+sign*d[0], c+sign*d[1]
			}
		}
		if len(line) >= 4 {
			slices.SortFunc(line, func(a, b [2]int) int {
				if a[0] != b[0] {
					return a[0] - b[0]
				}
				return a[1] - b[1]
			})
			return line
		}
	}
	return nil
}

func (g *c4Game) end(o Outcome) {
	g.Result, g.TurnEnd = o, time.Time{}
}

// onTurn is the user on turn, or nil once the game is over.
func (g *c4Game) onTurn() *string {
	if g.Result.Done {
		return nil
	}
	return &g.Players[g.Turn]
}

// Expire makes the player on turn lose when the turn's time is up.
func (g *c4Game) Expire(now time.Time) []Event {
	if g.Result.Done || now.Before(g.TurnEnd) {
		return nil
	}
	loser, winner := g.Players[g.Turn], g.Players[1-g.Turn]
	g.end(Outcome{Done: true, Winner: winner, Reason: "timeout", TimedOut: true})
	return []Event{{Name: domain.EventConnect4Timeout, Data: C4Forfeit{UserID: loser, WinnerID: winner}}}
}

// Resume gives the player on turn the full turn time again from now.
// False once the game is over.
func (g *c4Game) Resume(now time.Time) bool {
	if g.Result.Done {
		return false
	}
	g.TurnEnd = now.Add(g.turnLength(g.Turn))
	return true
}

// Resign ends the game in the other player's favour. Errors:
// GAME_NOT_ACTIVE, NOT_A_PLAYER.
func (g *c4Game) Resign(player string, now time.Time) ([]Event, error) {
	if g.Result.Done {
		return nil, notActive()
	}
	seat, err := seatOf(g.Players, player)
	if err != nil {
		return nil, err
	}
	winner := g.Players[1-seat]
	g.end(Outcome{Done: true, Winner: winner, Reason: "resign"})
	return []Event{{Name: domain.EventConnect4Resign, Data: C4Forfeit{UserID: player, WinnerID: winner}}}, nil
}

// Public is the whole game (Connect Four has no hidden information) in the
// shape shared by all game types.
func (g *c4Game) Public(now time.Time) View {
	board := make([][]string, C4Rows)
	for r := range board {
		board[r] = slices.Clone(g.Board[r][:])
	}
	history := make([]C4Move, len(g.Moves))
	for i, m := range g.Moves {
		history[i] = C4Move{MoveNumber: i + 1, UserID: m.UserID, Column: m.Column, Row: m.Row}
	}
	scores := map[string]int{g.Players[0]: 0, g.Players[1]: 0}
	phase, number := "playing", len(g.Moves)+1
	if g.Result.Done {
		phase, number = "finished", len(g.Moves)
		if g.Result.Winner != "" {
			scores[g.Result.Winner] = 1
		}
	}
	var turn *string
	if t := g.onTurn(); t != nil {
		turn = optional(*t)
	}
	return &C4View{
		ViewBase: ViewBase{
			Players: slices.Clone(g.Players),
			Round:   Round{Number: number, Phase: phase, Deadline: timeString(g.TurnEnd)},
			Timer:   timer(g.TurnEnd, now),
			Scores:  scores,
			Outcome: outcomeView(g.Result),
			Berserk: maps.Clone(g.Halved),
		},
		History:     history,
		Board:       board,
		Turn:        turn,
		Rows:        C4Rows,
		Columns:     C4Columns,
		TurnSeconds: g.TurnSeconds,
		Line:        winLine(g.Line),
	}
}
