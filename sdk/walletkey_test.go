package wager_test

import (
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"

	wager "wager.example.com/sdk"
)

// A bot keeps its wallet as base58 text: the same text signs in as the
// same wallet, and text that is not a secret key is refused by New.
func TestAWalletKeyIsItsBase58Text(t *testing.T) {
	key, other := wager.NewWalletKey(), wager.NewWalletKey()
	a, err := wager.New("http://localhost:8080", wager.WithWalletKey(key))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wager.New("http://localhost:8080", wager.WithWalletKey(" "+key+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Wallet().IsZero() || a.Wallet() != b.Wallet() {
		t.Errorf("the same key gives the wallets %s and %s", a.Wallet(), b.Wallet())
	}
	if other == key {
		t.Error("two new keys are the same")
	}
	mixed := solana.MustPrivateKeyFromBase58(key)[:32:32] // one key's seed with another's public half
	mixed = append(mixed, solana.MustPrivateKeyFromBase58(other)[32:]...)
	for _, bad := range []string{"", "not-base58-0OIl", key[:20], mixed.String()} {
		if _, err := wager.New("http://localhost:8080", wager.WithWalletKey(bad)); err == nil || !strings.Contains(err.Error(), "not a base58 ed25519 secret key") {
			t.Errorf("WithWalletKey(%q): %v, want a refusal", bad, err)
		}
	}
}
