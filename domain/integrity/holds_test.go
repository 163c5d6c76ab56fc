package integrity

import (
	"testing"

	"wager/domain/game/rules"
)

func TestHoldsOnlyWinsAPlayerCouldHaveThrownWithMoreOnThemThanTheStakes(t *testing.T) {
	resign := rules.Outcome{Done: true, Winner: "b", Reason: "resign"}
	onTime := rules.Outcome{Done: true, Winner: "b", Reason: "score", TimedOut: true}
	played := rules.Outcome{Done: true, Winner: "b", Reason: "score"}
	draw := rules.Outcome{Done: true, Reason: "abandoned"}
	for _, c := range []struct {
		what        string
		stake       int64
		o           rules.Outcome
		pools, paid int64
		want        bool
	}{
		{"a resignation with pools over the pot", 100, resign, 201, 0, true},
		{"a resignation with the market's volume over the pot", 100, resign, 0, 201, true},
		{"a round lost on time with pools over the pot", 100, onTime, 300, 0, true},
		{"a resignation with pools at the pot", 100, resign, 200, 200, false},
		{"a game played out", 100, played, 10_000, 10_000, false},
		{"a draw or cancellation refunds everything anyway", 100, draw, 10_000, 10_000, false},
		{"a free game has neither pools nor market", 0, resign, 10_000, 10_000, false},
	} {
		if got := Holds(c.stake, 2, c.o, c.pools, c.paid); got != c.want {
			t.Errorf("%s: Holds = %v, want %v", c.what, got, c.want)
		}
	}
}
