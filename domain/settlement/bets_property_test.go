package settlement

import (
	"math/rand/v2"
	"testing"
)

// Over random pools: payouts, fee and remainder add up to the total, every
// winning bet gets at least its floor share, no losing bet is paid, and
// without a bet on the winner every bet comes back whole.
func TestBetPayoutsProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 26))
	for run := 0; run < 2000; run++ {
		n := 1 + r.IntN(200)
		amounts, onWinner := make([]int64, n), make([]bool, n)
		var total, won int64
		for i := range amounts {
			amounts[i] = MinBet + r.Int64N([]int64{10, 1_000_000, 10_000_000_000}[r.IntN(3)])
			onWinner[i] = r.IntN(3) == 0
			total += amounts[i]
			if onWinner[i] {
				won += amounts[i]
			}
		}
		payouts, fee, remainder := BetPayouts(amounts, onWinner)
		sum := fee + remainder
		for _, p := range payouts {
			sum += p
		}
		if sum != total {
			t.Fatalf("run %d: payouts+fee+remainder = %d, total %d", run, sum, total)
		}
		if won == 0 {
			for i := range amounts {
				if payouts[i] != amounts[i] || fee != 0 || remainder != 0 {
					t.Fatalf("run %d: no bet on the winner, yet bet %d of %d paid %d (fee %d)", run, i, amounts[i], payouts[i], fee)
				}
			}
			continue
		}
		if fee != total/100 || remainder < 0 || remainder >= int64(n) {
			t.Fatalf("run %d: fee %d remainder %d for total %d and %d bets", run, fee, remainder, total, n)
		}
		net := total - fee
		for i := range amounts {
			if !onWinner[i] && payouts[i] != 0 {
				t.Fatalf("run %d: losing bet %d paid %d", run, i, payouts[i])
			}
			// floor(net*b/W) is the largest p with p*W <= net*b.
			if onWinner[i] {
				lo, hi := float64(payouts[i])*float64(won), float64(payouts[i]+1)*float64(won)
				x := float64(net) * float64(amounts[i])
				if lo > x*(1+1e-12) || hi < x*(1-1e-12) {
					t.Fatalf("run %d: winning bet %d of %d paid %d, not floor(%d*%d/%d)", run, i, amounts[i], payouts[i], net, amounts[i], won)
				}
			}
		}
	}
}

func TestBetPayoutsExample(t *testing.T) {
	// 300000 on the winner (100000 + 200000), 700000 on the loser: T = 1000000,
	// fee 10000, 990000 shared 1:2.
	payouts, fee, remainder := BetPayouts([]int64{100_000, 200_000, 700_000}, []bool{true, true, false})
	if payouts[0] != 330_000 || payouts[1] != 660_000 || payouts[2] != 0 || fee != 10_000 || remainder != 0 {
		t.Fatalf("payouts %v fee %d remainder %d", payouts, fee, remainder)
	}
	payouts, fee, remainder = BetPayouts([]int64{10_000, 10_000, 10_001}, []bool{true, true, false})
	// T = 30001, fee 300, net 29701, each winner floor(29701/2) = 14850, 1 left.
	if payouts[0] != 14_850 || payouts[1] != 14_850 || fee != 300 || remainder != 1 {
		t.Fatalf("payouts %v fee %d remainder %d", payouts, fee, remainder)
	}
}
