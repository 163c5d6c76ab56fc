package tournament

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func seeded(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x70a7))
}

// randomSplit is a valid prize split of 1 to 10 places, with zeros now and
// then.
func randomSplit(rng *rand.Rand) []int {
	n := 1 + rng.IntN(MaxPlaces)
	cuts := make([]int, 0, n+1)
	cuts = append(cuts, 0, 10_000)
	for range n - 1 {
		cuts = append(cuts, rng.IntN(10_001))
	}
	slices.Sort(cuts)
	split := make([]int, n)
	for i := range split {
		split[i] = cuts[i+1] - cuts[i]
	}
	return split
}

// randomStandings are n players with scores drawn from a small range, so
// that ties are common, ranked.
func randomStandings(rng *rand.Rand, n int) []Standing {
	rows := make([]Standing, n)
	spread := 1 + rng.IntN(12)
	for i := range rows {
		rows[i] = Standing{UserID: fmt.Sprintf("u%03d", i), Username: fmt.Sprintf("p%03d", rng.IntN(1000)), Score: 2 * rng.IntN(spread)}
	}
	return Rank(rows)
}

// The prize arithmetic over random standings, fees and splits: the
// prizes, the fee and what the floors leave make up the pool exactly; the
// fee is floor(pool / 100); players tied on score win the same; nobody is
// paid twice and nobody who is not in the standings is paid; nothing is
// negative; without ties and with every place reached, place i gets
// exactly floor((pool - fee) x bps_i / 10000); and a tied group together
// wins no more than the places it spans.
func TestPrizeArithmeticProperty(t *testing.T) {
	rng := seeded(t)
	for i := range 20_000 {
		split := randomSplit(rng)
		players := 1 + rng.IntN(40)
		fee := int64(0)
		if rng.IntN(4) > 0 {
			fee = MinEntryFee + rng.Int64N(MaxEntryFee-MinEntryFee+1)
		}
		if rng.IntN(5) == 0 {
			fee = MinEntryFee + rng.Int64N(300) // where rounding shows
		}
		pool := fee * int64(players)
		st := randomStandings(rng, players)
		p := Prizes(pool, split, st)
		fail := func(format string, args ...any) {
			t.Fatalf("case %d: pool %d split %v standings %+v: %s", i, pool, split, st, fmt.Sprintf(format, args...))
		}
		sum := int64(0)
		paid := map[string]int64{}
		for _, pr := range p.Prizes {
			if pr.AmountMinor <= 0 {
				fail("prize %+v is not positive", pr)
			}
			if _, twice := paid[pr.UserID]; twice {
				fail("%s is paid twice", pr.UserID)
			}
			paid[pr.UserID] = pr.AmountMinor
			sum += pr.AmountMinor
		}
		if p.FeeMinor != pool/100 {
			fail("fee %d, want floor(pool / 100) = %d", p.FeeMinor, pool/100)
		}
		if p.FloorsMinor < 0 || sum+p.FeeMinor+p.FloorsMinor != pool || p.PoolMinor != pool {
			fail("prizes %d + fee %d + floors %d != pool %d", sum, p.FeeMinor, p.FloorsMinor, pool)
		}
		byScore := map[int][]string{}
		for _, s := range st {
			byScore[s.Score] = append(byScore[s.Score], s.UserID)
		}
		for _, s := range st {
			for _, other := range byScore[s.Score] {
				if paid[other] != paid[s.UserID] {
					fail("tied players %s (%d) and %s (%d) are paid differently", s.UserID, paid[s.UserID], other, paid[other])
				}
			}
		}
		for u := range paid {
			if !slices.ContainsFunc(st, func(s Standing) bool { return s.UserID == u }) {
				fail("%s is paid without being in the standings", u)
			}
		}
		eff := EffectiveSplit(split, players)
		effSum := 0
		for _, b := range eff {
			if b < 0 {
				fail("effective split %v has a negative share", eff)
			}
			effSum += b
		}
		if effSum != 10_000 {
			fail("effective split %v sums to %d", eff, effSum)
		}
		net := pool - p.FeeMinor
		ties := len(byScore) != len(st)
		if !ties && players >= len(split) {
			for k, s := range st {
				want := int64(0)
				if k < len(split) {
					want = net * int64(split[k]) / 10_000
				}
				if paid[s.UserID] != want {
					fail("place %d got %d, want floor(%d x %d / 10000) = %d", k+1, paid[s.UserID], net, split[k], want)
				}
			}
		}
		for start := 0; start < len(st); {
			end := start
			span := int64(0)
			for end < len(st) && st[end].Score == st[start].Score {
				if end < len(eff) {
					span += net * int64(eff[end]) / 10_000
				}
				end++
			}
			if got := paid[st[start].UserID] * int64(end-start); got > span || span-got >= int64(end-start) {
				fail("places %d-%d: the group won %d of the %d its places pay", start+1, end, got, span)
			}
			start = end
		}
	}
}

// Pairing over random waiting players: every player is paired at most
// once and all but at most one are; nobody plays themselves; a pairing of
// two players who just played each other stays only when no swap with
// another pairing, nor with the player left over, avoids it.
func TestPairingProperty(t *testing.T) {
	rng := seeded(t)
	for i := range 5_000 {
		n := rng.IntN(30)
		if rng.IntN(50) == 0 {
			n = 200 + rng.IntN(400)
		}
		c := make([]Candidate, n)
		for k := range c {
			c[k] = Candidate{UserID: fmt.Sprintf("u%03d", k), Score: 2 * rng.IntN(1+rng.IntN(8))}
		}
		// Last games: a random matching among some of them (as games
		// pair players two by two), and a few whose last opponent is not
		// waiting.
		order := rng.Perm(n)
		for k := 0; k+1 < len(order); k += 2 {
			switch rng.IntN(3) {
			case 0:
				a, b := order[k], order[k+1]
				c[a].LastOpponent, c[b].LastOpponent = c[b].UserID, c[a].UserID
			case 1:
				c[order[k]].LastOpponent = "gone"
			}
		}
		got := Pair(c, rng)
		fail := func(format string, args ...any) {
			t.Fatalf("case %d: waiting %+v, pairings %v: %s", i, c, got, fmt.Sprintf(format, args...))
		}
		if len(got) != n/2 {
			fail("%d pairings of %d players, want %d", len(got), n, n/2)
		}
		last := map[string]string{}
		for _, x := range c {
			last[x.UserID] = x.LastOpponent
		}
		repeat := func(a, b string) bool { return last[a] == b || last[b] == a }
		seen := map[string]bool{}
		for _, p := range got {
			if p[0] == p[1] {
				fail("%s plays themselves", p[0])
			}
			for _, u := range p {
				if seen[u] {
					fail("%s is paired twice", u)
				}
				if _, ok := last[u]; !ok {
					fail("%s was not waiting", u)
				}
				seen[u] = true
			}
		}
		var left []string
		for _, x := range c {
			if !seen[x.UserID] {
				left = append(left, x.UserID)
			}
		}
		for k, p := range got {
			if !repeat(p[0], p[1]) {
				continue
			}
			for _, x := range left {
				if !repeat(p[0], x) || !repeat(p[1], x) {
					fail("%v play again while %s waits and could play one of them", p, x)
				}
			}
			for m, q := range got {
				if m == k {
					continue
				}
				if (!repeat(p[0], q[0]) && !repeat(p[1], q[1])) || (!repeat(p[0], q[1]) && !repeat(p[1], q[0])) {
					fail("%v play again although a swap with %v avoids it", p, q)
				}
			}
		}
	}
}

// Closest scores first: with nobody's last opponent waiting, players are
// paired with the nearest scores.
func TestPairingTakesClosestScores(t *testing.T) {
	rng := seeded(t)
	for _, tc := range []struct {
		scores []int
		want   [][2]int // pairs of scores
	}{
		{[]int{0, 0, 4, 4}, [][2]int{{0, 0}, {4, 4}}},
		{[]int{12, 0, 10, 2}, [][2]int{{0, 2}, {10, 12}}},
		{[]int{20, 3, 2, 21, 9, 8}, [][2]int{{2, 3}, {8, 9}, {20, 21}}},
	} {
		for range 50 {
			c := make([]Candidate, len(tc.scores))
			score := map[string]int{}
			for i, s := range tc.scores {
				c[i] = Candidate{UserID: fmt.Sprint("u", i), Score: s}
				score[c[i].UserID] = s
			}
			var got [][2]int
			for _, p := range Pair(c, rng) {
				a, b := score[p[0]], score[p[1]]
				got = append(got, [2]int{min(a, b), max(a, b)})
			}
			slices.SortFunc(got, func(x, y [2]int) int { return x[0] - y[0] })
			if !slices.Equal(got, tc.want) {
				t.Fatalf("scores %v: pairs %v, want %v", tc.scores, got, tc.want)
			}
		}
	}
}

// Random among equals: four players on one score meet each of the others
// over many pairings.
func TestPairingIsRandomAmongEquals(t *testing.T) {
	rng := seeded(t)
	c := []Candidate{{UserID: "a"}, {UserID: "b"}, {UserID: "c"}, {UserID: "d"}}
	met := map[string]bool{}
	seats := map[string]int{}
	for range 200 {
		for _, p := range Pair(c, rng) {
			if p[0] == "a" || p[1] == "a" {
				met[p[0]+p[1]] = true
			}
			seats[p[0]]++
		}
	}
	if len(met) != 6 { // a meets b, c and d, in either seat
		t.Errorf("a met %v over 200 pairings, want each of the others in both seats", met)
	}
	if seats["a"] < 50 || seats["a"] > 150 {
		t.Errorf("a took the first seat %d times of 200", seats["a"])
	}
}

// The streak bonus: win 2, draw 1, loss 0; from two wins in a row each
// further win counts 4, until a game that is not a win.
func TestScoringWithTheStreakBonus(t *testing.T) {
	for _, tc := range []struct {
		games      string // W, D, L
		score      int
		onFire     bool
		lastPoints int
	}{
		{"", 0, false, 0},
		{"W", 2, false, 2},
		{"WW", 4, true, 2},
		{"WWW", 8, true, 4},
		{"WWWW", 12, true, 4},
		{"WWWL", 8, false, 0},
		{"WWWLW", 10, false, 2},
		{"WWWLWWW", 16, true, 4},
		{"WWD", 5, false, 1},
		{"WWDW", 7, false, 2},
		{"DDD", 3, false, 1},
		{"LWW", 4, true, 2},
		{"WLWLW", 6, false, 2},
	} {
		r := Record{}
		points := 0
		for _, g := range tc.games {
			o := map[rune]Outcome{'W': Win, 'D': Draw, 'L': Loss}[g]
			points = r.Points(Result{Outcome: o})
			r = r.After(Result{Outcome: o})
		}
		if r.Score != tc.score || r.OnFire() != tc.onFire || points != tc.lastPoints || r.Games != len(tc.games) {
			t.Errorf("%q: score %d, on fire %v, last game %d points (record %+v); want %d, %v, %d",
				tc.games, r.Score, r.OnFire(), points, r, tc.score, tc.onFire, tc.lastPoints)
		}
	}
}

// Ties share a rank (1, 2, 2, 4), the highest score first.
func TestStandingsTiesShareARank(t *testing.T) {
	rows := Rank([]Standing{{UserID: "a", Username: "dee", Score: 4}, {UserID: "b", Username: "bo", Score: 10},
		{UserID: "c", Username: "cy", Score: 4}, {UserID: "d", Username: "al", Score: 0}, {UserID: "e", Username: "ed", Score: 4}})
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d:%s:%d", r.Rank, r.Username, r.Score))
	}
	want := []string{"1:bo:10", "2:cy:4", "2:dee:4", "2:ed:4", "5:al:0"}
	if !slices.Equal(got, want) {
		t.Errorf("standings %v, want %v", got, want)
	}
}

// Examples of the prizes: ties share the places they span, fewer players
// than places share the split in proportion.
func TestPrizeExamples(t *testing.T) {
	st := func(scores ...int) []Standing {
		rows := make([]Standing, len(scores))
		for i, s := range scores {
			rows[i] = Standing{UserID: fmt.Sprint("u", i), Username: fmt.Sprint("p", i), Score: s}
		}
		return Rank(rows)
	}
	for _, tc := range []struct {
		name   string
		pool   int64
		split  []int
		st     []Standing
		prizes map[string]int64
		floors int64
	}{
		{"three places", 4_000_000, []int{5000, 3000, 2000}, st(8, 6, 4, 2), // net 3960000
			map[string]int64{"u0": 1_980_000, "u1": 1_188_000, "u2": 792_000}, 0},
		{"a tie for second", 4_000_000, []int{5000, 3000, 2000}, st(8, 6, 6, 2),
			map[string]int64{"u0": 1_980_000, "u1": 990_000, "u2": 990_000}, 0},
		{"a tie across the last paid place", 4_000_000, []int{5000, 3000, 2000}, st(8, 6, 4, 4), // 792000 / 2
			map[string]int64{"u0": 1_980_000, "u1": 1_188_000, "u2": 396_000, "u3": 396_000}, 0},
		{"three tied for first", 300_000, []int{5000, 3000, 2000}, st(2, 2, 2), // net 297000, 99000 each
			map[string]int64{"u0": 99_000, "u1": 99_000, "u2": 99_000}, 0},
		{"floors", 300_001, []int{3333, 3333, 3334}, st(6, 4, 2), // fee 3000, net 297001
			map[string]int64{"u0": 98_990, "u1": 98_990, "u2": 99_020}, 1},
		{"two players, three places", 2_000_000, []int{5000, 3000, 2000}, st(2, 0), // split 6250/3750 of 1980000
			map[string]int64{"u0": 1_237_500, "u1": 742_500}, 0},
		{"free", 0, []int{10000}, st(4, 2), map[string]int64{}, 0},
	} {
		p := Prizes(tc.pool, tc.split, tc.st)
		got := map[string]int64{}
		for _, pr := range p.Prizes {
			got[pr.UserID] = pr.AmountMinor
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.prizes) || p.FloorsMinor != tc.floors {
			t.Errorf("%s: prizes %v floors %d, want %v floors %d", tc.name, got, p.FloorsMinor, tc.prizes, tc.floors)
		}
	}
}

// Berserk and the streak together, over random sequences of games: the
// score is what a model of the rules adds up (a win 2, or 4 on fire, +1
// for a long enough berserk win; a draw 1; a loss 0), going berserk never
// changes the streak or a non-win's points, the bonus is paid only for
// long berserk wins, and the games lost on time in a row are counted
// (two pause the player).
func TestBerserkAndTheStreakTogether(t *testing.T) {
	rng := seeded(t)
	for seq := range 2000 {
		var r, plain Record
		score, streak, bonuses, berserks, timeLosses := 0, 0, 0, 0, 0
		for g := range rng.IntN(30) {
			res := Result{Outcome: Outcome(rng.IntN(3)), Berserk: rng.IntN(2) == 0, Long: rng.IntN(3) > 0}
			res.LostOnTime = res.Outcome == Loss && rng.IntN(3) == 0
			before := r
			r = r.After(res)
			plain = plain.After(Result{Outcome: res.Outcome, LostOnTime: res.LostOnTime})

			switch res.Outcome {
			case Win:
				pts := WinPoints
				if streak >= FireAfter {
					pts = FireWin
				}
				if res.Berserk && res.Long {
					pts++
					bonuses++
				}
				score += pts
				streak++
			case Draw:
				score++
				streak = 0
			default:
				streak = 0
			}
			if res.Berserk {
				berserks++
			}
			if res.LostOnTime {
				timeLosses++
			} else {
				timeLosses = 0
			}
			if r.Score != score || r.Streak != streak || r.Berserks != berserks || r.TimeLosses != timeLosses {
				t.Fatalf("sequence %d, game %d (%+v after %+v): record %+v; the model says score %d, streak %d, berserks %d, time losses %d",
					seq, g, res, before, r, score, streak, berserks, timeLosses)
			}
			if r.Score-plain.Score != bonuses || r.Streak != plain.Streak || r.OnFire() != plain.OnFire() {
				t.Fatalf("sequence %d, game %d: going berserk changed more than the bonuses (%d): %+v against %+v", seq, g, bonuses, r, plain)
			}
			if bonuses > r.Wins {
				t.Fatalf("sequence %d: %d bonuses with %d wins", seq, bonuses, r.Wins)
			}
		}
	}
}
