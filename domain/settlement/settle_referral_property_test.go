package settlement

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/referrals"
	"wager/domain/social"
)

// The property: over random referral trees (up to 5 levels deep) and
// random staked games, every settlement's fee is exactly the treasury's
// income plus the referral rewards it created, to the minor unit; the
// rewards are what the rule gives (each player's half of the fee, the
// first player taking the odd unit, 20/5/2% to the referrers at levels
// 1-3, floored, nothing from level 4 on); the pending rewards account
// grows by as much; a draw, a free game or a second settlement creates
// none; and the ledger sums to zero throughout.
func TestReferralRewardsProperty(t *testing.T) {
	const games = 30
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed^0x2ef))
	t.Logf("seed %d", seed)
	p := newPlatformWith(t, func(bdb *bun.DB, now domain.Clock) Deps {
		rooms := eventlog.New(bdb, noSink{})
		n := notify.New(bdb, rooms, now)
		return Deps{Referrals: referrals.New(bdb, n, social.New(bdb, n, rooms, nil, now), rooms, now, referrals.DefaultBPS, "http://test")}
	})
	ctx := context.Background()

	// A random forest: each user hangs under an earlier one (or under
	// nobody) as long as that one is less than 5 levels deep.
	parent, depth := map[string]string{}, map[string]int{}
	var tree []string
	join := func(userID string, candidates []string) {
		var by any
		if len(candidates) > 0 && rng.IntN(5) > 0 {
			up := candidates[rng.IntN(len(candidates))]
			if depth[up] < 5 {
				parent[userID], depth[userID], by = up, depth[up]+1, up
			}
		}
		if _, err := p.db.ExecContext(ctx, "INSERT INTO referrals (user_id, code, referred_by, created_at) VALUES (?, ?, ?, ?)",
			userID, uuid.NewString(), by, p.clock.now()); err != nil {
			t.Fatal(err)
		}
	}
	for range 25 {
		u := p.newUser(t, 0)
		join(u.ID, tree)
		tree = append(tree, u.ID)
	}

	paid := 0
	for i := range games {
		stake := randomAmount(rng, 20_000_000)
		g := p.start(t, stake)
		for _, pl := range g.Players {
			join(pl, tree)
		}
		for range rng.IntN(3) {
			p.donate(t, g.ID, 1+randomAmount(rng, 5_000_000))
		}
		o := rules.Outcome{Done: true, Reason: "score"}
		if w := rng.IntN(3); w < 2 {
			o.Winner = g.Players[w]
		} else {
			o.Reason = "board-full"
		}
		treasury, pending := p.balance(t, money.Treasury), p.balance(t, referrals.Pending)
		out := p.settle(t, g, o)

		want := map[string]int64{} // earner -> reward, from the rule
		if o.Winner != "" && stake > 0 {
			shares := referrals.Shares(out.FeeMinor)
			if shares[0]+shares[1] != out.FeeMinor || shares[0]-shares[1] > 1 || shares[0] < shares[1] {
				t.Fatalf("shares %v of fee %d", shares, out.FeeMinor)
			}
			for seat, pl := range g.Players {
				up := pl
				for level := 1; level <= 3; level++ {
					if up = parent[up]; up == "" {
						break
					}
					if r := shares[seat] * referrals.DefaultBPS[level-1] / 10_000; r > 0 {
						want[fmt.Sprintf("%s/%s/%d", up, pl, level)] = r
					}
				}
			}
		}
		got := p.rewardsOf(t, g.ID)
		var created int64
		for k, v := range got {
			created += v
			if want[k] != v {
				t.Errorf("reward %s: got %d, want %d", k, v, want[k])
			}
		}
		paid += len(got)
		if len(got) != len(want) {
			t.Errorf("rewards: got %v, want %v", got, want)
		}
		if income := p.balance(t, money.Treasury) - treasury; income+created != out.FeeMinor {
			t.Errorf("fee %d != treasury income %d + rewards %d", out.FeeMinor, income, created)
		}
		if d := p.balance(t, referrals.Pending) - pending; d != created {
			t.Errorf("pending rewards account: +%d, want +%d", d, created)
		}
		p.settle(t, g, o)
		if again := p.rewardsOf(t, g.ID); len(again) != len(got) {
			t.Errorf("a second settlement changed the rewards: %v, then %v", got, again)
		}
		p.wantLedgerAtZero(t)
		if t.Failed() {
			t.Fatalf("seed %d: game %d of %d (stake %d, outcome %+v) failed", seed, i+1, games, stake, o)
		}
	}
	if paid == 0 {
		t.Fatalf("seed %d: no game paid a reward, so the property was not exercised", seed)
	}
	t.Logf("%d rewards over %d games", paid, games)
}

// rewardsOf reads a game's referral rewards as earner/player/level ->
// amount.
func (p *platform) rewardsOf(t testing.TB, gameID string) map[string]int64 {
	t.Helper()
	var rows []referrals.Reward
	if err := p.db.NewSelect().Model(&rows).Where("game_id = ?", gameID).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[fmt.Sprintf("%s/%s/%d", r.UserID, r.FromUserID, r.Level)] += r.AmountMinor
	}
	return out
}
