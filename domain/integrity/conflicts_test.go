package integrity

import (
	"testing"
	"time"

	"wager/domain/chat"
)

func TestEachStakeOfAMemberOfStaffIsAConflictInWords(t *testing.T) {
	at := time.Date(2026, 12, 1, 14, 5, 30, 0, time.FixedZone("CET", 3600))
	staff, bob, carol := chat.UserRef{UserID: "s", Username: "sam"}, chat.UserRef{UserID: "b", Username: "bob"}, chat.UserRef{UserID: "c", Username: "carol"}
	tip, amount := int64(10_000), int64(2_500_000)
	arena := "Friday arena"
	for _, c := range []struct {
		what string
		s    stake
		want []Conflict
	}{
		{"no stake", stake{staff: "s"}, nil},
		{"a player", stake{staff: "s", played: true}, []Conflict{{StakePlayer, "you played in this game"}}},
		{"a bettor", stake{staff: "s", bets: 2, betMinor: 1_500_000}, []Conflict{{StakeBet, "you bet 1.50 USDC on this game"}}},
		{"a holder", stake{staff: "s", holdings: []holding{{"bob", 5}, {"carol", 1}}},
			[]Conflict{{StakeTrade, "you hold 5 shares of bob and 1 share of carol in this game's market"}}},
		{"a trader who sold out", stake{staff: "s", holdings: []holding{{"bob", 0}}}, []Conflict{{StakeTrade, "you traded in this game's market"}}},
		{"an entrant", stake{staff: "s", arena: &arena}, []Conflict{{StakeEntry, "you entered this game's arena, Friday arena"}}},
		{"tipped by a bettor", stake{staff: "s", links: []Pair{{UserID: "s", Link: Link{UserID: "b", Username: "bob", Reasons: []string{ReasonTip},
			Evidence: []Evidence{{Kind: ReasonTip, At: at, By: bob, To: staff, AmountMinor: &tip}, {Kind: ReasonTip, At: at.Add(-time.Hour), By: staff, To: bob, AmountMinor: &tip}}}}}},
			[]Conflict{{StakeTip, "bob tipped you 0.01 USDC on 1 Dec 2026, 13:05 UTC"}}},
		{"linked twice to a player, and tipped", stake{staff: "s", links: []Pair{{UserID: "s", Link: Link{UserID: "c", Username: "carol",
			Reasons: []string{ReasonReferral, ReasonTip, ReasonTransfer}, Evidence: []Evidence{
				{Kind: ReasonTransfer, At: at, By: staff, To: carol, AmountMinor: &amount},
				{Kind: ReasonTip, At: at, By: staff, To: carol, AmountMinor: &tip},
				{Kind: ReasonReferral, At: at.AddDate(0, -2, 0), By: carol, To: staff}}}}}},
			[]Conflict{{StakeTip, "you tipped carol 0.01 USDC on 1 Dec 2026, 13:05 UTC"},
				{StakeLink, "you are linked to carol: one referred the other; a transfer went between them in the last 30 days " +
					"(carol referred you on 1 Oct 2026, 13:05 UTC; you sent carol 2.50 USDC on 1 Dec 2026, 13:05 UTC)"}}},
		{"all at once, in the rules' order", stake{staff: "s", played: true, bets: 1, betMinor: 10_000, arena: &arena},
			[]Conflict{{StakePlayer, "you played in this game"}, {StakeBet, "you bet 0.01 USDC on this game"},
				{StakeEntry, "you entered this game's arena, Friday arena"}}},
	} {
		t.Run(c.what, func(t *testing.T) {
			var got []Conflict
			for _, rule := range conflictRules {
				got = append(got, rule(c.s)...)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("conflict %d: got %q, want %q", i, got[i], c.want[i])
				}
			}
		})
	}
}
