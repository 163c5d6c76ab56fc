package localchain

import "testing"

// The wants are what the SPL Memo v3 program (the binary clusters run at
// MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr) logged for each memo.
func TestMemoTextIsWrittenAsTheMemoProgramWritesIt(t *testing.T) {
	cases := []struct{ memo, want string }{
		{"", `""`},
		{"wager-arena:games-log:12:BASE64ROOT=", `"wager-arena:games-log:12:BASE64ROOT="`},
		{`q"b\`, `"q\"b\\"`},
		{"é", `"é"`},
		{"\n\r\t\x00'", `"\n\r\t\u{0}\'"`},
		{"\x7f\u0085", `"\u{7f}\u{85}"`},
		{"\u200b", `"\u{200b}"`},
		{"😀🏻", `"😀🏻"`},
		{"\u00a0\u3000", `"\u{a0}\u{3000}"`},
		{"e\u0301", `"e\u{301}"`},
		{"\u0301x", `"\u{301}x"`},
		{"\u200d\ufe0f\U000e0020\u2028\u2029\ufeff\u00ad\u061c\u180e", `"\u{200d}\u{fe0f}\u{e0020}\u{2028}\u{2029}\u{feff}\u{ad}\u{61c}\u{180e}"`},
	}
	for _, c := range cases {
		if got := rustDebugString(c.memo); got != c.want {
			t.Errorf("%q: got %s, want %s", c.memo, got, c.want)
		}
	}
}

// The wants are what LiteSVM 1.5's Memo program consumed.
func TestMemoUnitsAreLiteSVMs(t *testing.T) {
	cases := []struct {
		bytes, signers int
		want           uint64
	}{
		{0, 0, 232}, {1, 0, 274}, {9, 0, 274}, {10, 0, 287}, {99, 0, 287}, {100, 0, 300}, {101, 0, 301},
		{500, 0, 700}, {999, 0, 1199}, {1000, 0, 1213},
		{0, 1, 458}, {50, 1, 513}, {150, 1, 576}, {1001, 1, 1440},
		{0, 2, 573}, {10, 2, 628}, {200, 2, 741}, {9, 3, 730}, {1000, 3, 1669},
	}
	for _, c := range cases {
		if got := memoUnits(c.bytes, c.signers); got != c.want {
			t.Errorf("%d bytes, %d signers: got %d units, want %d", c.bytes, c.signers, got, c.want)
		}
	}
}
