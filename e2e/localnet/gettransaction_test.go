package localnet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/e2e/localnet"
)

// getTransaction answers a landed transaction at the commitment asked
// (finalized by default, as a cluster), in the json encoding by default,
// with the logs LiteSVM's programs wrote.
func TestGetTransactionAnswersALandedTransaction(t *testing.T) {
	ln := localnet.StartWith(t, localnet.Options{FinalizeSlots: 2})
	ctx := context.Background()
	client := ln.RPC()
	payer := mustKey(t)
	ln.Airdrop(t, payer.PublicKey(), payerLamport)
	bh, err := client.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.NewTransaction([]solana.Instruction{setComputeUnitPrice(cuPrice), memo("hello", payer.PublicKey())},
		bh.Value.Blockhash, solana.TransactionPayer(payer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &payer }); err != nil {
		t.Fatal(err)
	}
	sig, err := client.SendTransaction(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := client.GetTransaction(ctx, sig, nil); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("before it is finalized: got %v, want rpc.ErrNotFound", err)
	}
	confirmed := &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed,
		MaxSupportedTransactionVersion: new(uint64)}
	got, err := client.GetTransaction(ctx, sig, confirmed)
	if err != nil {
		t.Fatalf("at confirmed: %v", err)
	}
	// The fee is the signature's and the price of the default budget: 3,000
	// units for the compute budget instruction, 200,000 for the memo.
	fee := uint64(5000 + (203_000*cuPrice+999_999)/1_000_000)
	if !slices.Contains(got.Meta.LogMessages, "Program log: hello") || got.Version != rpc.LegacyTransactionVersion ||
		got.Meta.Fee != fee || got.Meta.PreBalances[0]-got.Meta.PostBalances[0] != fee {
		t.Errorf("at confirmed: version %d, fee %d (want %d), balances %v -> %v, logs %q", got.Version, got.Meta.Fee, fee,
			got.Meta.PreBalances, got.Meta.PostBalances, got.Meta.LogMessages)
	}
	if _, err := client.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentProcessed}); err == nil || errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("at processed: got %v, want the RPC's refusal", err)
	}

	ln.Airdrop(t, mustKey(t).PublicKey(), payerLamport) // two slots pass
	ln.Airdrop(t, mustKey(t).PublicKey(), payerLamport)
	got, err = client.GetTransaction(ctx, sig, nil)
	if err != nil {
		t.Fatalf("once finalized: %v", err)
	}
	answered, err := got.Transaction.GetTransaction()
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := tx.Message.MarshalBinary()
	read, _ := answered.Message.MarshalBinary()
	if answered.Signatures[0] != sig || !bytes.Equal(sent, read) {
		t.Errorf("the json encoding is not the transaction sent: %+v", answered)
	}
	var raw map[string]json.RawMessage
	if err := ln.Call(ctx, "getTransaction", []any{sig.String()}, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["version"]; ok {
		t.Errorf("without maxSupportedTransactionVersion the version is left out: %s", raw["version"])
	}

	var unknown solana.Signature
	unknown[0] = 1
	if _, err := client.GetTransaction(ctx, unknown, confirmed); !errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("an unknown signature: got %v, want rpc.ErrNotFound", err)
	}
}
