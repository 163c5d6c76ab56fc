package chat

import (
	"strings"
	"testing"

	"wager/domain"
)

func TestCleanText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		invalid        bool
	}{
		{name: "plain", in: "gg", want: "gg"},
		{name: "trimmed", in: "  \n gg wp \t\n", want: "gg wp"},
		{name: "newlines kept, CRLF normalised", in: "one\r\ntwo\rthree\nfour", want: "one\ntwo\nthree\nfour"},
		{name: "a tab inside is refused", in: "a\tb", invalid: true},
		{name: "NUL refused", in: "a\x00b", invalid: true},
		{name: "escape refused", in: "a\x1b[31mred", invalid: true},
		{name: "DEL refused", in: "a\x7fb", invalid: true},
		{name: "C1 refused", in: "a\u0085b", invalid: true},
		{name: "right-to-left override refused", in: "abc\u202Egnp.exe", invalid: true},
		{name: "isolate refused", in: "a\u2066x\u2069", invalid: true},
		{name: "emoji joiners kept", in: "👩\u200D💻", want: "👩\u200D💻"},
		{name: "html kept as typed", in: "<script>alert(1)</script>", want: "<script>alert(1)</script>"},
		{name: "invalid UTF-8 replaced", in: "a\xffb", want: "a\uFFFDb"},
		{name: "exactly 500", in: strings.Repeat("é", 500), want: strings.Repeat("é", 500)},
		{name: "500 after trimming", in: "  " + strings.Repeat("x", 500) + "  ", want: strings.Repeat("x", 500)},
		{name: "empty", in: "", invalid: true},
		{name: "only spaces", in: " \t\n\r ", invalid: true},
		{name: "only controls", in: "\x00\x01\u202E", invalid: true},
		{name: "501", in: strings.Repeat("é", 501), invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CleanText(tc.in)
			if tc.invalid {
				if domain.ErrorCode(err) != domain.CodeValidation || err.(*domain.Error).Fields["text"] == "" {
					t.Fatalf("CleanText(%q) = %q, %v; want VALIDATION_ERROR for text", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CleanText(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestPairKeyIsTheSameBothWays(t *testing.T) {
	a, b := "0b7e4c8e-0000-4000-8000-000000000001", "f00d0000-0000-4000-8000-000000000002"
	if pairKey(a, b) != pairKey(b, a) || pairKey(a, b) != a+":"+b {
		t.Fatalf("pairKey(a, b) = %q, pairKey(b, a) = %q; want %q for both", pairKey(a, b), pairKey(b, a), a+":"+b)
	}
}
