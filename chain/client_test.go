package chain_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/chain"
)

// The books credit at the client's commitment, so the balances they are
// checked against are read there too: read at confirmed while credits
// wait for finalized, a settlement transfer confirmed but not finalized
// showed as a shortfall of its escrow for the half minute between.
func TestCreditedBalancesAreReadAtTheCreditCommitment(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Params []json.RawMessage `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || len(req.Params) < 2 {
			t.Errorf("request %s", body)
		}
		var opts struct {
			Commitment string `json:"commitment"`
		}
		_ = json.Unmarshal(req.Params[1], &opts)
		mu.Lock()
		asked = append(asked, opts.Commitment)
		mu.Unlock()
		io.WriteString(w, `{"jsonrpc":"2.0","result":{"context":{"slot":1},"value":null},"id":1}`)
	}))
	defer srv.Close()
	owner, mint := solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	for _, tc := range []struct {
		commitment rpc.CommitmentType
		want       string
	}{{"", "confirmed"}, {rpc.CommitmentConfirmed, "confirmed"}, {rpc.CommitmentFinalized, "finalized"}} {
		c := chain.NewClient(srv.URL, nil)
		c.Commitment = tc.commitment
		asked = nil
		if _, err := c.CreditedTokenBalance(context.Background(), owner, mint); err != nil {
			t.Fatal(err)
		}
		if _, err := c.TokenBalance(context.Background(), owner, mint); err != nil {
			t.Fatal(err)
		}
		if len(asked) != 2 || asked[0] != tc.want || asked[1] != "confirmed" {
			t.Errorf("credit commitment %q: read at %q, want the credited balance at %s and the balance at confirmed", tc.commitment, asked, tc.want)
		}
	}
}
