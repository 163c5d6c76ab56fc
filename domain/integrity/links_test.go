package integrity

import (
	"testing"
	"time"

	"wager/domain/chat"
)

func TestEvidenceSaysWhatMadeALinkWhenAndByWhom(t *testing.T) {
	at := time.Date(2026, 12, 1, 14, 5, 0, 0, time.UTC)
	later := at.Add(26 * time.Hour)
	alice, bob := chat.UserRef{UserID: "a", Username: "alice"}, chat.UserRef{UserID: "b", Username: "bob"}
	tip, sent := int64(10_000), int64(1_234_567)
	for _, c := range []struct {
		e         Evidence
		you, want string
	}{
		{Evidence{Kind: ReasonReferral, At: at, By: alice, To: bob}, "", "alice referred bob on 1 Dec 2026, 14:05 UTC"},
		{Evidence{Kind: ReasonTip, At: at, By: alice, To: bob, AmountMinor: &tip}, "", "alice tipped bob 0.01 USDC on 1 Dec 2026, 14:05 UTC"},
		{Evidence{Kind: ReasonTransfer, At: at, By: bob, To: alice, AmountMinor: &sent}, "a", "bob sent you 1.234567 USDC on 1 Dec 2026, 14:05 UTC"},
		{Evidence{Kind: ReasonAddress, At: at, By: alice, To: bob, ToAt: &later}, "",
			"alice and bob signed in from the same address: alice on 1 Dec 2026, 14:05 UTC, bob on 2 Dec 2026, 16:05 UTC"},
	} {
		if got := c.e.Sentence(c.you); got != c.want {
			t.Errorf("%s: got %q, want %q", c.e.Kind, got, c.want)
		}
	}
}
