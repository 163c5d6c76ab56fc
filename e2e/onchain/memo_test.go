package onchain_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/chain"
	"wager/chain/localchain"
	"wager/db/dbtest"
	"wager/e2e/localnet"
)

// TestMemoLogsOnBothChains lands the same memo transactions on LiteSVM and
// on the embedded chain and reads them back with getTransaction, as a
// verifier reads a checkpoint's memo from a cluster.
//
// The runtime's lines (invoke, consumed, success, the compute budget's)
// must be the same on both, byte for byte. The Memo program's own lines
// cannot be: LiteSVM 1.5 runs a Pinocchio build of the Memo program at the
// SPL Memo's address, which logs "Signed by:", each signer, "Memo (len N)"
// and the raw text on lines of their own, where the SPL Memo v3 program
// clusters run (and the embedded chain writes) logs "Signed by <address>"
// and `Memo (len N): "<text as Rust's Debug of a string>"`. Each chain's
// lines are checked against its program's exact form, so a LiteSVM that
// changes its Memo program fails here.
func TestMemoLogsOnBothChains(t *testing.T) {
	ctx := context.Background()
	keys := chain.NewKeys([]byte("memo logs"))
	payer := keys.FeePayer()
	l := localnet.Start(t)
	l.Airdrop(t, payer.PublicKey(), 1_000_000_000)
	lc, err := localchain.New(ctx, dbtest.DB(t), time.Now, keys.LocalMint().PublicKey(), keys.LocalMintAuthority().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Airdrop(ctx, payer.PublicKey(), 1_000_000_000); err != nil {
		t.Fatal(err)
	}
	embedded := httptest.NewServer(lc)
	defer embedded.Close()
	chains := []struct {
		name string
		rpc  *rpc.Client
	}{{"litesvm", rpc.New(l.URL)}, {"embedded", rpc.New(embedded.URL)}}

	signer := "Program log: Signed by " + payer.PublicKey().String()
	memos := []struct{ text, debug string }{
		{"wager-arena:games-log:12:q1Xm0l3C6QhO4wQ0fH6mJcS2yq3qk4mFJ8p2p0m7Ux8=",
			`"wager-arena:games-log:12:q1Xm0l3C6QhO4wQ0fH6mJcS2yq3qk4mFJ8p2p0m7Ux8="`},
		{`say "hi" \ bye`, `"say \"hi\" \\ bye"`},
		{"café crème", `"café crème"`},
	}
	for _, m := range memos {
		length := strconv.Itoa(len(m.text))
		own := map[string][]string{
			"litesvm":  {"Program log: Signed by:", "Program log: " + payer.PublicKey().String(), "Program log: Memo (len " + length + ")", "Program log: " + m.text},
			"embedded": {signer, "Program log: Memo (len " + length + "): " + m.debug},
		}
		for _, limit := range []uint32{0, 20_000} {
			var runtime [][]string
			var results []*rpc.GetTransactionResult
			for _, c := range chains {
				got := landMemo(t, c.rpc, payer, m.text, limit)
				logs := got.Meta.LogMessages
				t.Logf("%s, limit %d, on %s:\n%s", m.text, limit, c.name, strings.Join(logs, "\n"))
				lines, programs := splitMemoLines(logs)
				if !slices.Equal(programs, own[c.name]) {
					t.Errorf("%q (limit %d) on %s: the Memo program logged\n%s\nwant\n%s", m.text, limit, c.name,
						strings.Join(programs, "\n"), strings.Join(own[c.name], "\n"))
				}
				runtime = append(runtime, lines)
				results = append(results, got)
			}
			if !slices.Equal(runtime[0], runtime[1]) {
				t.Errorf("%q (limit %d): the runtime's lines differ:\nLiteSVM:\n%s\nembedded:\n%s", m.text, limit,
					strings.Join(runtime[0], "\n"), strings.Join(runtime[1], "\n"))
			}
			lite, emb := results[0].Meta, results[1].Meta
			if lite.Fee != emb.Fee || lite.PreBalances[0]-lite.PostBalances[0] != lite.Fee || emb.PreBalances[0]-emb.PostBalances[0] != emb.Fee {
				t.Errorf("%q (limit %d): fees %d on LiteSVM (payer %d -> %d), %d here (payer %d -> %d)", m.text, limit,
					lite.Fee, lite.PreBalances[0], lite.PostBalances[0], emb.Fee, emb.PreBalances[0], emb.PostBalances[0])
			}
			if lite.ComputeUnitsConsumed == nil || emb.ComputeUnitsConsumed == nil || *lite.ComputeUnitsConsumed != *emb.ComputeUnitsConsumed {
				t.Errorf("%q (limit %d): computeUnitsConsumed %v on LiteSVM, %v here", m.text, limit, lite.ComputeUnitsConsumed, emb.ComputeUnitsConsumed)
			}
		}
	}

	var unknown solana.Signature
	rand.Read(unknown[:])
	for _, c := range chains {
		if _, err := c.rpc.GetTransaction(ctx, unknown, transactionOpts); !errors.Is(err, rpc.ErrNotFound) {
			t.Errorf("an unknown signature on %s: got %v, want rpc.ErrNotFound", c.name, err)
		}
	}
}

var transactionOpts = &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed,
	MaxSupportedTransactionVersion: new(uint64)}

// landMemo sends a transaction of one memo signed by its fee payer (after
// a SetComputeUnitLimit, unless limit is 0) and returns what getTransaction
// answers for it.
func landMemo(t *testing.T, c *rpc.Client, payer solana.PrivateKey, memo string, limit uint32) *rpc.GetTransactionResult {
	t.Helper()
	ctx := context.Background()
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	var ixs []solana.Instruction
	if limit > 0 {
		ixs = append(ixs, chain.SetComputeUnitLimit(limit))
	}
	tx, err := solana.NewTransaction(append(ixs, chain.Memo(memo, payer.PublicKey())), bh.Value.Blockhash,
		solana.TransactionPayer(payer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, payer); err != nil {
		t.Fatal(err)
	}
	sig, err := c.SendTransaction(ctx, tx)
	if err != nil {
		t.Fatalf("send %q: %v", memo, err)
	}
	got, err := c.GetTransaction(ctx, sig, transactionOpts)
	if err != nil {
		t.Fatalf("getTransaction of %q: %v", memo, err)
	}
	sent, err := got.Transaction.GetTransaction()
	if err != nil {
		t.Fatal(err)
	}
	if sent.Signatures[0] != sig || got.Version != rpc.LegacyTransactionVersion || got.BlockTime == nil || got.Meta.Err != nil {
		t.Errorf("getTransaction of %q: signature %s, version %d, block time %v, err %v", memo, sent.Signatures[0],
			got.Version, got.BlockTime, got.Meta.Err)
	}
	return got
}

// splitMemoLines separates the Memo program's own lines (those between its
// invoke line and its consumed line) from the runtime's.
func splitMemoLines(logs []string) (runtime, own []string) {
	memo := "Program " + chain.MemoProgramID.String() + " "
	inside := false
	for _, line := range logs {
		switch {
		case line == memo+"invoke [1]":
			inside = true
		case strings.HasPrefix(line, memo+"consumed "):
			inside = false
		case inside:
			own = append(own, line)
			continue
		}
		runtime = append(runtime, line)
	}
	return runtime, own
}
