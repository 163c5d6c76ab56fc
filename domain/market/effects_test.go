package market

import (
	"testing"

	"wager/domain/market/engine"
)

// A sell refused for want of shares leaves nothing to write: in a batch
// whose other orders commit, it must not store an empty position.
func TestARefusedSellAddsNoHolding(t *testing.T) {
	fx := newEffects("g", "o", map[slot]*holding{{"seller", 1}: {Shares: 2, Locked: 1}})
	if fx.lock(engine.Order{Owner: "seller", Side: engine.Sell, Outcome: 0, Price: 500_000, Shares: 1}) {
		t.Fatal("a sell of shares never held was taken")
	}
	if fx.lock(engine.Order{Owner: "seller", Side: engine.Sell, Outcome: 1, Price: 500_000, Shares: 2}) {
		t.Fatal("a sell of locked shares was taken")
	}
	if len(fx.holdings) != 1 || len(fx.postings) != 0 {
		t.Fatalf("refused sells left holdings %v and postings %v", fx.holdings, fx.postings)
	}
}
