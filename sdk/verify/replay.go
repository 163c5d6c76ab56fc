package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"wager.example.com/sdk/gamerecord"
)

// Record is a record of the public log of games (see the API's
// Verifiability section).
type Record = gamerecord.Record

// Outcome is how a record says its game ended, and Payout a payment it
// lists.
type (
	Outcome = gamerecord.Outcome
	Payout  = gamerecord.Payout
)

// feeBps is the platform's fee on a won pot, in basis points: 1%, floored.
const feeBps = 100

// ended is how a replayed game ended: its winner ("" for a draw) and why.
type ended struct {
	winner, reason string
}

// Replay plays the record's game again from its own events (the moves,
// and for rock-paper-scissors the choices and salts each reveal opens,
// checked against the commitments made before), and checks that it ends
// as the record says and that the pot paid the winner what the record
// says to the minor unit. The record's own account of its end must agree
// too: its last event is the game's game:completed, whose outcome and
// money are the record's, and the donations it counts are the
// game:donation events it carries. Each error says what does not hold.
//
// The rules replayed here are the API's, written apart from the
// platform's own implementation of them: a fault in the platform's rules
// is not one the verifier shares.
func Replay(r Record) error {
	if len(r.Players) != 2 {
		return fmt.Errorf("record %d: game %s has %d players; the games this verifier knows have 2", r.Index, r.GameID, len(r.Players))
	}
	if a, b := r.Players[0].UserID, r.Players[1].UserID; a == "" || b == "" || a == b {
		return fmt.Errorf("record %d: game %s's players %q and %q are not two users", r.Index, r.GameID, a, b)
	}
	var g game
	switch r.GameType {
	case "rps":
		rounds, err := intSetting(r.Settings, "rounds")
		if err != nil || rounds < 1 || rounds > 9 || rounds%2 == 0 {
			return fmt.Errorf("record %d: the settings %s give no odd number of rounds from 1 to 9", r.Index, r.Settings)
		}
		g = newRPS(r, rounds)
	case "connect4":
		g = newConnectFour(r)
	default:
		return fmt.Errorf("record %d: game type %q is not one this verifier knows", r.Index, r.GameType)
	}
	own := "game:" + r.GameType + ":" // the names of the game's play; chat, donations and the like are not replayed
	for i, e := range r.Events {
		_, done := g.ended()
		var err error
		switch {
		case e.GameID != r.GameID:
			err = fmt.Errorf("an event of game %s", e.GameID)
		case i > 0 && e.Seq <= r.Events[i-1].Seq:
			err = fmt.Errorf("out of order, after event %d", r.Events[i-1].Seq)
		case !strings.HasPrefix(e.Name, own) && (strings.HasPrefix(e.Name, "game:rps:") || strings.HasPrefix(e.Name, "game:connect4:")):
			err = fmt.Errorf("an event of another game type than %s", r.GameType)
		case strings.HasPrefix(e.Name, own) && done:
			err = fmt.Errorf("a move after the game ended")
		default:
			err = g.play(e)
		}
		if err != nil {
			return fmt.Errorf("record %d, event %d (%s): %w", r.Index, e.Seq, e.Name, err)
		}
	}
	o, done := g.ended()
	if !done {
		return fmt.Errorf("record %d: replayed from its events, game %s has not ended", r.Index, r.GameID)
	}
	if err := checkOutcome(r, o); err != nil {
		return err
	}
	return checkEnd(r)
}

// game is a game being replayed, one event at a time.
type game interface {
	play(e gamerecord.Event) error
	ended() (ended, bool)
}

// over is how a replayed game ended, once it has.
type over struct{ result *ended }

func (o *over) ended() (ended, bool) {
	if o.result == nil {
		return ended{}, false
	}
	return *o.result, true
}

// intSetting reads a whole-number setting of a record's settings.
func intSetting(settings json.RawMessage, name string) (int, error) {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(settings, &s); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(s[name]))
	if err != nil {
		return 0, fmt.Errorf("setting %s: %w", name, err)
	}
	return n, nil
}

// seatOf is a player's seat, or an error naming who is not a player.
func seatOf(players []string, userID string) (int, error) {
	for i, p := range players {
		if p == userID {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%q is not a player of the game", userID)
}

// resign ends a game in the favour of the player who did not resign.
func resign(players []string, data json.RawMessage) (*ended, error) {
	var d struct {
		UserID string `json:"userId"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	seat, err := seatOf(players, d.UserID)
	if err != nil {
		return nil, err
	}
	return &ended{winner: players[1-seat], reason: "resign"}, nil
}

// rps replays rock, paper, scissors: the first to win the majority of an
// odd number of decisive rounds wins; each choice is committed as the hex
// SHA-256 of gameId|round|userId|choice|salt before the round is revealed.
type rps struct {
	gameID      string
	players     []string
	target      int
	round       int
	commitments map[string]string // of the current round
	scores      map[string]int
	over
}

func newRPS(r Record, rounds int) *rps {
	players := []string{r.Players[0].UserID, r.Players[1].UserID}
	return &rps{gameID: r.GameID, players: players, target: (rounds + 1) / 2, round: 1,
		commitments: map[string]string{}, scores: map[string]int{}}
}

// rpsBeats maps each choice to the choice it beats.
var rpsBeats = map[string]string{"rock": "scissors", "paper": "rock", "scissors": "paper"}

func (g *rps) play(e gamerecord.Event) error {
	if len(g.commitments) == len(g.players) && e.Name != "game:rps:round:reveal" && strings.HasPrefix(e.Name, "game:rps:") {
		return fmt.Errorf("both players chose in round %d, and the round is not revealed next", g.round)
	}
	switch e.Name {
	case "game:rps:round:start":
		var d struct {
			Round int `json:"round"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return err
		}
		if d.Round != g.round {
			return fmt.Errorf("round %d starts when round %d is due", d.Round, g.round)
		}
	case "game:rps:round:submitted":
		var d struct {
			Round      int    `json:"round"`
			UserID     string `json:"userId"`
			Commitment string `json:"commitment"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return err
		}
		if _, err := seatOf(g.players, d.UserID); err != nil {
			return err
		}
		if d.Round != g.round {
			return fmt.Errorf("%s chose in round %d during round %d", d.UserID, d.Round, g.round)
		}
		if _, twice := g.commitments[d.UserID]; twice {
			return fmt.Errorf("%s chose twice in round %d", d.UserID, d.Round)
		}
		g.commitments[d.UserID] = d.Commitment
	case "game:rps:round:reveal":
		return g.reveal(e.Data)
	case "game:rps:resign":
		var err error
		g.result, err = resign(g.players, e.Data)
		return err
	default:
		if strings.HasPrefix(e.Name, "game:rps:") {
			return fmt.Errorf("not an event of rock, paper, scissors")
		}
	}
	return nil
}

// saltPattern is a commitment's salt: 16 random bytes in lowercase hex.
var saltPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// reveal opens the current round's commitments, scores the round and
// either ends the game or moves to the next round. A player who did not
// choose loses the round on time; when neither chose, the game ends
// abandoned.
func (g *rps) reveal(data json.RawMessage) error {
	var d struct {
		Round    int                `json:"round"`
		Choices  map[string]*string `json:"choices"`
		Salts    map[string]*string `json:"salts"`
		WinnerID *string            `json:"winnerId"`
		Reason   string             `json:"reason"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return err
	}
	if d.Round != g.round {
		return fmt.Errorf("round %d is revealed during round %d", d.Round, g.round)
	}
	var movers []string
	choices := map[string]string{}
	for _, p := range g.players {
		committed, chose := g.commitments[p]
		choice, salt := d.Choices[p], d.Salts[p]
		if choice == nil {
			if chose {
				return fmt.Errorf("%s's choice in round %d was committed but never revealed", p, g.round)
			}
			continue
		}
		if !chose {
			return fmt.Errorf("%s's choice in round %d is revealed but was never committed", p, g.round)
		}
		if rpsBeats[*choice] == "" || salt == nil || !saltPattern.MatchString(*salt) {
			return fmt.Errorf("%s's reveal in round %d is not a choice and its salt (16 bytes in hex)", p, g.round)
		}
		sum := sha256.Sum256([]byte(g.gameID + "|" + strconv.Itoa(g.round) + "|" + p + "|" + *choice + "|" + *salt))
		if opened := hex.EncodeToString(sum[:]); opened != committed {
			return fmt.Errorf("%s committed %s in round %d, but the choice %q and salt revealed hash to %s", p, committed, g.round, *choice, opened)
		}
		choices[p] = *choice
		movers = append(movers, p)
	}
	var won ended
	switch len(movers) {
	case 0:
		won.reason = "abandoned"
	case 1:
		won = ended{winner: movers[0], reason: "timeout"}
	default:
		won.reason = "played"
		a, b := g.players[0], g.players[1]
		switch {
		case rpsBeats[choices[a]] == choices[b]:
			won.winner = a
		case rpsBeats[choices[b]] == choices[a]:
			won.winner = b
		}
	}
	if said := deref(d.WinnerID); said != won.winner || d.Reason != won.reason {
		return fmt.Errorf("the reveal says round %d was won by %q (%s); its choices say by %q (%s)", g.round, said, d.Reason, won.winner, won.reason)
	}
	switch {
	case won.reason == "abandoned":
		g.result = &ended{reason: "abandoned"}
	case won.winner != "":
		g.scores[won.winner]++
		if g.scores[won.winner] >= g.target {
			g.result = &ended{winner: won.winner, reason: "score"}
		}
	}
	g.round++
	g.commitments = map[string]string{}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Connect Four's board: 7 columns of 6 rows; the first seat moves first.
const (
	c4Rows    = 6
	c4Columns = 7
)

// connectFour replays Connect Four: pieces dropped in turn, four in a row
// in any direction wins, a full board is a draw, the player on turn who
// runs out of time loses.
type connectFour struct {
	players []string
	board   [c4Rows][c4Columns]int // seat+1, or 0 for an empty cell
	turn    int                    // the seat on turn
	moves   int
	over
}

func newConnectFour(r Record) *connectFour {
	return &connectFour{players: []string{r.Players[0].UserID, r.Players[1].UserID}}
}

func (g *connectFour) play(e gamerecord.Event) error {
	switch e.Name {
	case "game:connect4:start":
		if g.moves > 0 {
			return fmt.Errorf("the game starts again after %d moves", g.moves)
		}
	case "game:connect4:move":
		var d struct {
			UserID string `json:"userId"`
			Column int    `json:"column"`
			Row    int    `json:"row"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return err
		}
		return g.drop(d.UserID, d.Column, d.Row)
	case "game:connect4:timeout":
		var d struct {
			UserID string `json:"userId"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return err
		}
		if d.UserID != g.players[g.turn] {
			return fmt.Errorf("%q lost on time, but %s was on turn", d.UserID, g.players[g.turn])
		}
		g.result = &ended{winner: g.players[1-g.turn], reason: "timeout"}
	case "game:connect4:resign":
		var err error
		g.result, err = resign(g.players, e.Data)
		return err
	default:
		if strings.HasPrefix(e.Name, "game:connect4:") {
			return fmt.Errorf("not an event of Connect Four")
		}
	}
	return nil
}

// drop puts the player's piece on the lowest empty cell of the column.
func (g *connectFour) drop(userID string, column, row int) error {
	seat, err := seatOf(g.players, userID)
	if err != nil {
		return err
	}
	if seat != g.turn {
		return fmt.Errorf("%s moved when %s was on turn", userID, g.players[g.turn])
	}
	if column < 0 || column >= c4Columns {
		return fmt.Errorf("%s dropped a piece in column %d, which the board does not have", userID, column)
	}
	landed := -1
	for r := c4Rows - 1; r >= 0; r-- {
		if g.board[r][column] == 0 {
			landed = r
			break
		}
	}
	if landed < 0 {
		return fmt.Errorf("%s dropped a piece in column %d, which is full", userID, column)
	}
	if landed != row {
		return fmt.Errorf("a piece dropped in column %d lands in row %d, the record says row %d", column, landed, row)
	}
	g.board[landed][column] = seat + 1
	g.moves++
	switch {
	case g.fourThrough(landed, column):
		g.result = &ended{winner: userID, reason: "connect4"}
	case g.moves == c4Rows*c4Columns:
		g.result = &ended{reason: "board-full"}
	default:
		g.turn = 1 - seat
	}
	return nil
}

// fourThrough says whether the piece at (row, column) is in a line of
// four or more of its owner's, across, down or diagonally.
func (g *connectFour) fourThrough(row, column int) bool {
	who := g.board[row][column]
	for _, d := range [][2]int{{0, 1}, {1, 0}, {1, 1}, {1, -1}} {
		n := 1
		for _, sign := range []int{1, -1} {
			r, c := row+sign*d[0], column+sign*d[1]
			for r >= 0 && r < c4Rows && c >= 0 && c < c4Columns && g.board[r][c] == who {
				n++
				r, c = r+sign*d[0], c+sign*d[1]
			}
		}
		if n >= 4 {
			return true
		}
	}
	return false
}

// checkOutcome checks the record's outcome and pot payout against the
// replayed game's.
func checkOutcome(r Record, o ended) error {
	status := "completed"
	if o.reason == "abandoned" {
		status = "cancelled"
	}
	winner := deref(r.Outcome.WinnerUserID)
	if r.Outcome.Status != status || winner != o.winner || r.Outcome.Reason != o.reason {
		return fmt.Errorf("record %d: game %s ended %s, won by %q on %s, by its events; the record says %s, won by %q on %s",
			r.Index, r.GameID, status, o.winner, o.reason, r.Outcome.Status, winner, r.Outcome.Reason)
	}
	players, m := int64(len(r.Players)), r.Money
	if r.StakeMinor < 0 || m.DonationsMinor < 0 || r.StakeMinor > (math.MaxInt64-m.DonationsMinor)/players {
		return fmt.Errorf("record %d: a stake of %d and donations of %d are not amounts a pot holds", r.Index, r.StakeMinor, m.DonationsMinor)
	}
	// A free game's pot is its donations: they are paid out as a staked
	// game's are.
	wantPot := players*r.StakeMinor + m.DonationsMinor
	if r.Money.PotMinor != wantPot {
		return fmt.Errorf("record %d: the pot is %d, but %d players staked %d and donors gave %d: %d",
			r.Index, r.Money.PotMinor, len(r.Players), r.StakeMinor, r.Money.DonationsMinor, wantPot)
	}
	var paid int64
	for _, p := range r.Money.Payouts {
		if p.Kind == gamerecord.PayoutPot {
			if p.UserID != o.winner {
				return fmt.Errorf("record %d: the pot was paid to %s, not to the winner %q", r.Index, p.UserID, o.winner)
			}
			if p.AmountMinor <= 0 || p.AmountMinor > math.MaxInt64-paid {
				return fmt.Errorf("record %d: a payout of the pot of %d is not a positive amount that adds to the others'", r.Index, p.AmountMinor)
			}
			paid += p.AmountMinor
		}
	}
	var fee, want int64 // nothing is taken or paid from the pot without a winner
	if o.winner != "" {
		fee = m.PotMinor/10_000*feeBps + m.PotMinor%10_000*feeBps/10_000 // floor(pot * fee / 10,000), without overflow
		want = m.PotMinor - fee
	}
	if m.FeeMinor != fee {
		return fmt.Errorf("record %d: the fee on a pot of %d is %d, the record says %d", r.Index, m.PotMinor, fee, m.FeeMinor)
	}
	if paid != want {
		return fmt.Errorf("record %d: the winner's payout of the pot is %d, the record says %d", r.Index, want, paid)
	}
	if o.winner == "" && r.StakeMinor > 0 {
		// A draw or cancellation gives each player their stake back (a
		// player may not bet on their game or trade its market, so their
		// refunds are their stake's).
		refunded := map[string]int64{}
		for _, p := range m.Payouts {
			if p.Kind == gamerecord.PayoutRefund {
				refunded[p.UserID] += p.AmountMinor
			}
		}
		for _, p := range r.Players {
			if refunded[p.UserID] != r.StakeMinor {
				return fmt.Errorf("record %d: without a winner %s gets their stake of %d back, the record refunds %d", r.Index, p.UserID, r.StakeMinor, refunded[p.UserID])
			}
		}
	}
	return nil
}

// The names of the events that tell a game's money and end.
const (
	eventDonation  = "game:donation"
	eventCompleted = "game:completed"
)

// completed is what checkEnd reads of game:completed's data.
type completed struct {
	GameID            string `json:"gameId"`
	Status            string `json:"status"`
	WinnerID          string `json:"winnerId"` // null (a draw) reads as ""
	Reason            string `json:"reason"`
	PotMinor          int64  `json:"potMinor"`
	SpectatorPotMinor int64  `json:"spectatorPotMinor"`
	FeeMinor          int64  `json:"feeMinor"`
	PayoutMinor       int64  `json:"payoutMinor"`
}

// checkEnd holds the record's outcome and money to the events it carries:
// its last event, and only that one, is game:completed, which says what
// the record says, and the donations the record counts are the sum of its
// game:donation events (a donation left out of the pot, or one the record
// makes up, does not add up).
func checkEnd(r Record) error {
	var donated int64
	for i, e := range r.Events {
		switch e.Name {
		case eventCompleted:
			if i != len(r.Events)-1 {
				return fmt.Errorf("record %d: game %s's %s is event %d, not the last", r.Index, r.GameID, eventCompleted, e.Seq)
			}
		case eventDonation:
			var d struct {
				AmountMinor int64 `json:"amountMinor"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || d.AmountMinor <= 0 || d.AmountMinor > math.MaxInt64-donated {
				return fmt.Errorf("record %d, event %d (%s): no positive amountMinor that adds to the others' in %s", r.Index, e.Seq, e.Name, e.Data)
			}
			donated += d.AmountMinor
		}
	}
	if donated != r.Money.DonationsMinor {
		return fmt.Errorf("record %d: the record says donors gave %d, but its %s events give %d", r.Index, r.Money.DonationsMinor, eventDonation, donated)
	}
	last := r.Events[len(r.Events)-1]
	if last.Name != eventCompleted {
		return fmt.Errorf("record %d: game %s's last event is %s, not %s", r.Index, r.GameID, last.Name, eventCompleted)
	}
	var c completed
	if err := json.Unmarshal(last.Data, &c); err != nil {
		return fmt.Errorf("record %d, event %d (%s): %w", r.Index, last.Seq, last.Name, err)
	}
	var paid int64
	for _, p := range r.Money.Payouts {
		if p.Kind == gamerecord.PayoutPot {
			paid += p.AmountMinor
		}
	}
	told := completed{GameID: r.GameID, Status: r.Outcome.Status, WinnerID: deref(r.Outcome.WinnerUserID), Reason: r.Outcome.Reason,
		PotMinor: r.Money.PotMinor, SpectatorPotMinor: r.Money.DonationsMinor, FeeMinor: r.Money.FeeMinor, PayoutMinor: paid}
	if c != told {
		return fmt.Errorf("record %d: its %s says %s; the record says %s", r.Index, eventCompleted, c, told)
	}
	return nil
}

// String is how an error tells an end: status, winner, reason and money.
func (c completed) String() string {
	return fmt.Sprintf("game %s %s, won by %q on %s, pot %d with donations %d, fee %d, the winner paid %d",
		c.GameID, c.Status, c.WinnerID, c.Reason, c.PotMinor, c.SpectatorPotMinor, c.FeeMinor, c.PayoutMinor)
}

// oneKeyEach refuses JSON in which an object names a member twice, or in
// two spellings that differ only in case. Go's decoder matches names
// regardless of case and keeps the last, other decoders the first or the
// exact one: a record whose readers could disagree on an amount is not
// one to accept.
func oneKeyEach(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	type object struct {
		keys  map[string]bool
		atKey bool // the next token is a member's name
	}
	var open []*object // the objects and arrays (nil) the decoder is in
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		var in *object
		if len(open) > 0 {
			in = open[len(open)-1]
		}
		if in != nil && in.atKey {
			if delim, ok := tok.(json.Delim); ok && delim == '}' {
				open = open[:len(open)-1]
				continue
			}
			name := tok.(string) // the decoder allows only a string here
			folded := strings.ToLower(strings.ToUpper(name))
			if in.keys[folded] {
				return fmt.Errorf("an object names %q twice, or in two spellings", name)
			}
			in.keys[folded], in.atKey = true, false
			continue
		}
		if in != nil {
			in.atKey = true // after this value, the next member's name
		}
		switch tok {
		case json.Delim('{'):
			open = append(open, &object{keys: map[string]bool{}, atKey: true})
		case json.Delim('['):
			open = append(open, nil)
		case json.Delim(']'):
			open = open[:len(open)-1]
		}
	}
}
