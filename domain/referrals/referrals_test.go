package referrals

import "testing"

func TestSharesGiveTheOddUnitToTheFirstPlayer(t *testing.T) {
	for _, tc := range []struct {
		fee  int64
		want [2]int64
	}{{0, [2]int64{0, 0}}, {1, [2]int64{1, 0}}, {2, [2]int64{1, 1}}, {19_999, [2]int64{10_000, 9_999}}, {20_000, [2]int64{10_000, 10_000}}} {
		if got := Shares(tc.fee); got != tc.want {
			t.Errorf("Shares(%d) = %v, want %v", tc.fee, got, tc.want)
		}
	}
}

func TestRewardOfRoundsDown(t *testing.T) {
	for _, tc := range []struct{ share, bps, want int64 }{
		{10_000, 2000, 2000}, {9_999, 2000, 1999}, {10_001, 500, 500}, {49, 200, 0}, {50, 200, 1}, {0, 2000, 0},
	} {
		if got := RewardOf(tc.share, tc.bps); got != tc.want {
			t.Errorf("RewardOf(%d, %d) = %d, want %d", tc.share, tc.bps, got, tc.want)
		}
	}
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{" AbC23 ": "abc23", "": "", string(make([]byte, MaxCodeLength+1)): ""} {
		if got := NormalizeCode(in); got != want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", in, got, want)
		}
	}
}
