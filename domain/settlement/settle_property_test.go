package settlement

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The property: for any stakes, donations and ending, a settlement pays
// fee = floor(total / 100) to the treasury and total - fee to the winner,
// or gives the stakes back and queues one refund per donation after a draw
// or cancellation; the ledger sums to zero afterwards; a second settlement
// answers the first and moves nothing (p.check verifies each of these).
func TestSettlementProperty(t *testing.T) {
	const games = 40
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed^0x5e77e))
	t.Logf("seed %d", seed)
	p := newPlatform(t)
	endings := []struct {
		winner int
		reason string
	}{{0, "score"}, {1, "score"}, {0, "resign"}, {1, "timeout"}, {-1, "board-full"}, {-1, "abandoned"}}
	for i := range games {
		tc := settlementCase{stake: randomAmount(rng, 20_000_000)}
		for range rng.IntN(4) {
			tc.donations = append(tc.donations, 1+randomAmount(rng, 5_000_000))
		}
		e := endings[rng.IntN(len(endings))]
		tc.winner, tc.reason = e.winner, e.reason
		p.check(t, tc)
		if t.Failed() {
			t.Fatalf("seed %d: game %d of %d failed: %+v", seed, i+1, games, tc)
		}
	}
}

// randomAmount is 0 to max minor units, often small (where the fee's
// rounding shows) and sometimes exactly 0 (a free game, no donation).
func randomAmount(rng *rand.Rand, max int64) int64 {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return rng.Int64N(300)
	default:
		return rng.Int64N(max + 1)
	}
}
