package tournament

import (
	"cmp"
	"math/rand/v2"
	"slices"
)

// Points of a game's result. A player on fire (two wins in a row or more)
// scores FireWin for each further win until a game that is not a win.
const (
	WinPoints  = 2
	DrawPoints = 1
	LossPoints = 0
	FireWin    = 4
	// FireAfter is how many wins in a row set a player on fire.
	FireAfter = 2
)

// Outcome is how one game ended for one player.
type Outcome int

// Outcomes of a game for a player.
const (
	Loss Outcome = iota
	Draw
	Win
)

// Berserk: a player who halves their time in a game (before their first
// move) wins BerserkBonus more with a win, when they played at least
// BerserkMinimum of the game's type: their own moves in Connect Four,
// rounds in rock, paper, scissors (no bonus for a game resigned at once).
const BerserkBonus = 1

// BerserkMinimum is how much of a game a berserk win must have played, by
// game type (rules.State.Played).
var BerserkMinimum = map[string]int{"connect4": 7, "rps": 2}

// PauseAfterTimeLosses is how many games lost on time in a row pause a
// player: one who does not play is not paired again until they resume.
const PauseAfterTimeLosses = 2

// Result is one ended game as it scores for one player.
type Result struct {
	Outcome Outcome
	// Berserk: the player went berserk in the game; Long: they played
	// enough of it for the berserk bonus (BerserkMinimum).
	Berserk, Long bool
	// LostOnTime: the player lost the game on time.
	LostOnTime bool
}

// Record is a player's results in a tournament so far.
type Record struct {
	Score  int
	Games  int
	Wins   int
	Draws  int
	Losses int
	// Streak is the wins in a row up to now.
	Streak int
	// Berserks is the games in which the player went berserk.
	Berserks int
	// TimeLosses is the games lost on time in a row up to now.
	TimeLosses int
}

// OnFire reports whether the player's next win counts FireWin.
func (r Record) OnFire() bool { return r.Streak >= FireAfter }

// Points is what a game ending in g scores for a player with record r: a
// win 2 (FireWin on fire), a draw 1, a loss 0, and BerserkBonus more for
// a long enough berserk win. Going berserk changes nothing else: not the
// streak, not the points of a loss.
func (r Record) Points(g Result) int {
	switch g.Outcome {
	case Win:
		bonus := 0
		if g.Berserk && g.Long {
			bonus = BerserkBonus
		}
		if r.OnFire() {
			return FireWin + bonus
		}
		return WinPoints + bonus
	case Draw:
		return DrawPoints
	}
	return LossPoints
}

// After returns r once game g ended for the player.
func (r Record) After(g Result) Record {
	r.Score += r.Points(g)
	r.Games++
	switch g.Outcome {
	case Win:
		r.Wins++
		r.Streak++
	case Draw:
		r.Draws++
		r.Streak = 0
	default:
		r.Losses++
		r.Streak = 0
	}
	if g.Berserk {
		r.Berserks++
	}
	if g.LostOnTime {
		r.TimeLosses++
	} else {
		r.TimeLosses = 0
	}
	return r
}

// Rescore is a player's record from their results in order, leaving out
// the games voided (voided[i] for results[i]): as if those games had never
// been played, the streaks across them included.
func Rescore(results []Result, voided []bool) Record {
	var r Record
	for i, g := range results {
		if !voided[i] {
			r = r.After(g)
		}
	}
	return r
}

// Standing is one line of a tournament's standings.
type Standing struct {
	Rank     int    `json:"rank" minimum:"1" doc:"players tied on score share a rank (1, 2, 2, 4)"`
	UserID   string `json:"userId"`
	Username string `json:"username"`
	Score    int    `json:"score"`
	Games    int    `json:"games"`
	Wins     int    `json:"wins"`
	Draws    int    `json:"draws"`
	Losses   int    `json:"losses"`
	OnFire   bool   `json:"onFire" doc:"two wins in a row or more: each further win counts 4 until a game that is not a win"`
	Berserks int    `json:"berserks" doc:"the ended games in which the player went berserk (halved their time for +1 on a win)"`
	// CurrentGameID is the tournament game the player is in now.
	CurrentGameID *string `json:"currentGameId" doc:"the tournament game the player is in now; null when waiting (or paused)"`
	Paused        bool    `json:"paused" doc:"not paired until resuming (POST /tournaments/:id/resume, or joining again): stays in the standings"`
	PausedReason  *string `json:"pausedReason" doc:"why the player is paused, in words for people; null when not paused"`
	Bot           bool    `json:"bot" doc:"a bot account"`
}

// Rank orders standings by score, highest first (then by username, and
// user id, for a stable order), and gives each line its rank: players
// tied on score share the rank of the first of them (1, 2, 2, 4). It
// sorts rows in place and returns them.
func Rank(rows []Standing) []Standing {
	slices.SortStableFunc(rows, func(a, b Standing) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Username, b.Username); c != 0 {
			return c
		}
		return cmp.Compare(a.UserID, b.UserID)
	})
	for i := range rows {
		rows[i].Rank = i + 1
		if i > 0 && rows[i].Score == rows[i-1].Score {
			rows[i].Rank = rows[i-1].Rank
		}
	}
	return rows
}

// Candidate is a player waiting to be paired.
type Candidate struct {
	UserID string
	Score  int
	// LastOpponent is who the player played last ("" for nobody).
	LastOpponent string
}

// Pairing is two players to start a game, in seat order.
type Pairing [2]string

// pairWindow is how many following players (in score order) each waiting
// player is weighed against in one pass: enough to find the closest
// partner that is not the last opponent; the players a pass leaves are
// weighed again among themselves.
const pairWindow = 6

// Pair pairs waiting players: closest scores first, in random order among
// equals (rnd), never two who just played each other when another choice
// exists (a swap with another pairing, or the one player left over), and
// every player but at most one (an odd count) paired. It returns the
// pairings; rnd also chooses the seats.
func Pair(waiting []Candidate, rnd *rand.Rand) []Pairing {
	c := slices.Clone(waiting)
	rnd.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	slices.SortStableFunc(c, func(a, b Candidate) int { return cmp.Compare(b.Score, a.Score) })

	type edge struct {
		i, j   int
		cost   int
		repeat bool
	}
	paired := make([]bool, len(c))
	var chosen [][2]int
	remaining := make([]int, len(c))
	for i := range remaining {
		remaining[i] = i
	}
	for len(remaining) >= 2 {
		var edges []edge
		for x, i := range remaining {
			for _, j := range remaining[x+1 : min(len(remaining), x+1+pairWindow)] {
				edges = append(edges, edge{i: i, j: j, cost: abs(c[i].Score - c[j].Score), repeat: rematch(c[i], c[j])})
			}
		}
		slices.SortStableFunc(edges, func(a, b edge) int {
			if a.repeat != b.repeat {
				if a.repeat {
					return 1
				}
				return -1
			}
			return cmp.Compare(a.cost, b.cost)
		})
		for _, e := range edges {
			if !paired[e.i] && !paired[e.j] {
				paired[e.i], paired[e.j] = true, true
				chosen = append(chosen, [2]int{e.i, e.j})
			}
		}
		var left []int
		for _, i := range remaining {
			if !paired[i] {
				left = append(left, i)
			}
		}
		if len(left) == len(remaining) {
			break // cannot happen: any two players form an edge
		}
		remaining = left
	}
	// A rematch of the last game stays only when no swap undoes it: with
	// the player left over, or with another pairing.
	cost := func(i, j int) int { return abs(c[i].Score - c[j].Score) }
	for k := range chosen {
		a, b := chosen[k][0], chosen[k][1]
		if !rematch(c[a], c[b]) {
			continue
		}
		if len(remaining) == 1 {
			x := remaining[0]
			switch {
			case !rematch(c[a], c[x]) && (rematch(c[b], c[x]) || cost(a, x) <= cost(b, x)):
				chosen[k], remaining[0] = [2]int{a, x}, b
				continue
			case !rematch(c[b], c[x]):
				chosen[k], remaining[0] = [2]int{b, x}, a
				continue
			}
		}
		best, bestCost, bestPairs := -1, 0, [2][2]int{}
		for m := range chosen {
			if m == k {
				continue
			}
			p, q := chosen[m][0], chosen[m][1]
			for _, swap := range [2][2][2]int{{{a, p}, {b, q}}, {{a, q}, {b, p}}} {
				if rematch(c[swap[0][0]], c[swap[0][1]]) || rematch(c[swap[1][0]], c[swap[1][1]]) {
					continue
				}
				total := cost(swap[0][0], swap[0][1]) + cost(swap[1][0], swap[1][1])
				if best < 0 || total < bestCost {
					best, bestCost, bestPairs = m, total, swap
				}
			}
		}
		if best >= 0 {
			chosen[k], chosen[best] = bestPairs[0], bestPairs[1]
		}
	}
	out := make([]Pairing, len(chosen))
	for k, p := range chosen {
		if rnd.IntN(2) == 1 {
			p[0], p[1] = p[1], p[0]
		}
		out[k] = Pairing{c[p[0]].UserID, c[p[1]].UserID}
	}
	return out
}

// rematch reports whether two players played each other in their last
// game.
func rematch(a, b Candidate) bool {
	return (a.LastOpponent != "" && a.LastOpponent == b.UserID) || (b.LastOpponent != "" && b.LastOpponent == a.UserID)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// FeeBps is the platform's fee on a tournament's pool, in basis points
// (1%, as on a game's pot).
const FeeBps = 100

// Prize is what one player won.
type Prize struct {
	UserID      string `json:"userId"`
	Username    string `json:"username"`
	Rank        int    `json:"rank" minimum:"1"`
	AmountMinor int64  `json:"amountMinor" minimum:"1"`
}

// Payout is how a tournament's pool is paid out: PoolMinor = the prizes +
// FeeMinor + FloorsMinor, where FloorsMinor is what rounding down the
// prizes left over (it goes to the treasury with the fee).
type Payout struct {
	PoolMinor   int64
	FeeMinor    int64
	FloorsMinor int64
	Prizes      []Prize
}

// EffectiveSplit is the prize split that applies with players entrants:
// the split itself when there are at least as many players as places;
// otherwise the places nobody reached are given to the places reached, in
// proportion to their own shares (floored, the odd basis points to the
// first place with a share), or in equal parts when none of them has one.
// It always sums to 10000 (for a split that does, and players >= 1).
func EffectiveSplit(split []int, players int) []int {
	if players >= len(split) || players <= 0 {
		return slices.Clone(split)
	}
	out := slices.Clone(split[:players])
	sum := 0
	for _, b := range out {
		sum += b
	}
	if sum == 0 {
		for i := range out {
			out[i] = 10_000 / players
		}
		out[0] += 10_000 - (10_000/players)*players
		return out
	}
	total, first := 0, -1
	for i, b := range out {
		out[i] = b * 10_000 / sum
		total += out[i]
		if first < 0 && out[i] > 0 {
			first = i
		}
	}
	out[first] += 10_000 - total
	return out
}

// Prizes pays out a pool of entries by the final standings (ranked by
// Rank): fee = floor(pool / 100); place i (from 1) gets floor((pool - fee)
// x bps_i / 10000) of EffectiveSplit(split, len(standings)); players tied
// on score share the prizes of the places they span equally, rounded
// down. Players whose prize is 0 are left out. What the floors leave is
// FloorsMinor.
func Prizes(pool int64, split []int, standings []Standing) Payout {
	fee := pool * FeeBps / 10_000
	net := pool - fee
	eff := EffectiveSplit(split, len(standings))
	place := func(i int) int64 { // 0-based
		if i >= len(eff) {
			return 0
		}
		return net * int64(eff[i]) / 10_000
	}
	out := Payout{PoolMinor: pool, FeeMinor: fee, Prizes: []Prize{}}
	paid := int64(0)
	for start := 0; start < len(standings); {
		end := start + 1
		for end < len(standings) && standings[end].Score == standings[start].Score {
			end++
		}
		group := int64(0)
		for i := start; i < end; i++ {
			group += place(i)
		}
		each := group / int64(end-start)
		if each > 0 {
			for _, s := range standings[start:end] {
				out.Prizes = append(out.Prizes, Prize{UserID: s.UserID, Username: s.Username, Rank: start + 1, AmountMinor: each})
				paid += each
			}
		}
		start = end
	}
	out.FloorsMinor = net - paid
	return out
}
