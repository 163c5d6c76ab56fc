package localchain_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/chain"
)

// rpcServer serves the fixture's chain over HTTP and returns solana-go's
// own client for it.
func (f *fixture) rpcServer(t *testing.T) (*rpc.Client, string) {
	t.Helper()
	srv := httptest.NewServer(f.chain)
	t.Cleanup(srv.Close)
	return rpc.New(srv.URL), srv.URL
}

// sendMemo lands a transaction of one memo signed by the fee payer, with
// the given compute budget instructions first.
func (f *fixture) sendMemo(t *testing.T, memo string, budget ...solana.Instruction) solana.Signature {
	t.Helper()
	bh, err := f.client.Blockhash(f.context)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.NewTransaction(append(budget, chain.Memo(memo, f.payer.PublicKey())), bh.Hash,
		solana.TransactionPayer(f.payer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, f.payer); err != nil {
		t.Fatal(err)
	}
	sig, err := f.client.SendAndConfirm(f.context, tx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

var base64Confirmed = &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed,
	MaxSupportedTransactionVersion: new(uint64)}

func TestGetTransactionAnswersAMemosLogs(t *testing.T) {
	f := newFixture(t)
	client, _ := f.rpcServer(t)
	memo := "wager-arena:games-log:12:q1Xm0l3C6QhO4wQ0fH6mJcS2yq3qk4mFJ8p2p0m7Ux8="
	sig := f.sendMemo(t, memo)

	got, err := client.GetTransaction(f.context, sig, base64Confirmed)
	if err != nil {
		t.Fatal(err)
	}
	memoID := chain.MemoProgramID.String()
	want := []string{
		"Program " + memoID + " invoke [1]",
		"Program log: Signed by " + f.payer.PublicKey().String(),
		`Program log: Memo (len 69): "` + memo + `"`,
		"Program " + memoID + " consumed 513 of 200000 compute units",
		"Program " + memoID + " success",
	}
	if strings.Join(got.Meta.LogMessages, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logs:\n%s\nwant:\n%s", strings.Join(got.Meta.LogMessages, "\n"), strings.Join(want, "\n"))
	}
	slot, _, _, err := f.chain.SignatureStatus(f.context, sig.String())
	if err != nil {
		t.Fatal(err)
	}
	if got.Slot != slot || got.BlockTime == nil || got.Version != rpc.LegacyTransactionVersion || got.Meta.Err != nil {
		t.Errorf("slot %d (status says %d), block time %v, version %d, err %v", got.Slot, slot, got.BlockTime, got.Version, got.Meta.Err)
	}
	if got.Meta.Fee != localchainFee(1) || got.Meta.ComputeUnitsConsumed == nil || *got.Meta.ComputeUnitsConsumed != 513 {
		t.Errorf("fee %d, units %v; want 5000 and 513", got.Meta.Fee, got.Meta.ComputeUnitsConsumed)
	}
	if len(got.Meta.PreBalances) != 2 || got.Meta.PreBalances[0]-got.Meta.PostBalances[0] != got.Meta.Fee {
		t.Errorf("balances %v -> %v: the fee payer's should drop by the fee", got.Meta.PreBalances, got.Meta.PostBalances)
	}
	tx, err := got.Transaction.GetTransaction()
	if err != nil {
		t.Fatal(err)
	}
	if tx.Signatures[0] != sig || !bytes.Equal(tx.Message.Instructions[0].Data, []byte(memo)) {
		t.Errorf("the transaction answered is not the one sent: %v", tx)
	}

	var unknown solana.Signature
	rand.Read(unknown[:])
	if _, err := client.GetTransaction(f.context, unknown, base64Confirmed); !errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("an unknown signature: got %v, want rpc.ErrNotFound", err)
	}
	airdrop, err := f.chain.Airdrop(f.context, f.bob.PublicKey(), 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetTransaction(f.context, airdrop, base64Confirmed); !errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("an airdrop, which has no transaction: got %v, want rpc.ErrNotFound", err)
	}
}

func localchainFee(signatures uint64) uint64 { return signatures * 5000 }

// consumedLine is a consumed line of the runtime: program, units used and
// units left before the instruction.
var consumedLine = regexp.MustCompile(`^Program (\w+) consumed (\d+) of (\d+) compute units$`)

func TestGetTransactionListsATransfersInstructionsAndItsMemoInOrder(t *testing.T) {
	f := newFixture(t)
	client, _ := f.rpcServer(t)
	sig, err := f.client.SendAndConfirm(f.context, f.transfer(t, 1_500_000, f.payer, f.alice), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.GetTransaction(f.context, sig, base64Confirmed)
	if err != nil {
		t.Fatal(err)
	}
	budget, ata, tok, memo := chain.ComputeBudgetProgramID.String(), chain.ATAProgramID.String(),
		chain.TokenProgramID.String(), chain.MemoProgramID.String()
	want := []string{
		"Program " + budget + " invoke [1]", "Program " + budget + " success",
		"Program " + budget + " invoke [1]", "Program " + budget + " success",
		"Program " + ata + " invoke [1]", "consumed " + ata, "Program " + ata + " success",
		"Program " + tok + " invoke [1]", "consumed " + tok, "Program " + tok + " success",
		"Program " + memo + " invoke [1]", "Program log: Signed by " + f.alice.PublicKey().String(),
		`Program log: Memo (len 4): "test"`, "consumed " + memo, "Program " + memo + " success",
	}
	logs := got.Meta.LogMessages
	if len(logs) != len(want) {
		t.Fatalf("logs:\n%s", strings.Join(logs, "\n"))
	}
	// Each instruction consumes from what the ones before it left: the
	// two budget instructions 150 each, of the 200,000 the transaction set.
	left, total := uint64(chain.ComputeUnitLimit-300), uint64(300)
	for i, line := range logs {
		program, ok := strings.CutPrefix(want[i], "consumed ")
		if !ok {
			if line != want[i] {
				t.Errorf("line %d: %q, want %q", i, line, want[i])
			}
			continue
		}
		m := consumedLine.FindStringSubmatch(line)
		if m == nil || m[1] != program {
			t.Errorf("line %d: %q, want %s's consumed line", i, line, program)
			continue
		}
		used, _ := strconv.ParseUint(m[2], 10, 64)
		of, _ := strconv.ParseUint(m[3], 10, 64)
		if of != left {
			t.Errorf("line %d: %q, want %d units left", i, line, left)
		}
		left -= used
		total += used
	}
	if got.Meta.ComputeUnitsConsumed == nil || *got.Meta.ComputeUnitsConsumed != total {
		t.Errorf("computeUnitsConsumed %v, the lines add up to %d", got.Meta.ComputeUnitsConsumed, total)
	}
}

func TestGetTransactionAnswersAtTheCommitmentAsked(t *testing.T) {
	f := newFixture(t)
	f.chain.FinalizeSlots = 5
	client, url := f.rpcServer(t)
	sig := f.sendMemo(t, "pending", chain.SetComputeUnitLimit(10_000))

	// Without a commitment the RPC answers at finalized, as a cluster does.
	if _, err := client.GetTransaction(f.context, sig, nil); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("before it is finalized: got %v, want rpc.ErrNotFound", err)
	}
	if _, err := client.GetTransaction(f.context, sig, base64Confirmed); err != nil {
		t.Fatalf("at confirmed: %v", err)
	}
	if _, err := client.GetTransaction(f.context, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentProcessed}); err == nil || errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("at processed: got %v, want the RPC's refusal", err)
	}
	f.clock.advance(5 * 400 * time.Millisecond)

	// The default encoding is json, which solana-go reads into a transaction.
	got, err := client.GetTransaction(f.context, sig, nil)
	if err != nil {
		t.Fatalf("once finalized: %v", err)
	}
	tx, err := got.Transaction.GetTransaction()
	if err != nil {
		t.Fatal(err)
	}
	want := `Program log: Memo (len 7): "pending"`
	if tx.Signatures[0] != sig || tx.Message.Instructions[1].ProgramIDIndex != 2 || got.Meta.LogMessages[4] != want {
		t.Errorf("json encoding: %+v, logs %q", tx, got.Meta.LogMessages)
	}

	// Without maxSupportedTransactionVersion the version is left out; the
	// message's instructions carry a null stack height.
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getTransaction", "params": []any{sig.String()}})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var envelope struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &envelope); err != nil {
		t.Fatal(err)
	}
	if _, ok := envelope.Result["version"]; ok || !strings.Contains(string(envelope.Result["transaction"]), `"stackHeight":null`) {
		t.Errorf("json answer without maxSupportedTransactionVersion: %s", raw)
	}
}

func TestGetTransactionOfATransactionKeptWithoutLogs(t *testing.T) {
	f := newFixture(t)
	client, _ := f.rpcServer(t)
	sig := f.sendMemo(t, "older")
	if _, err := f.db.ExecContext(context.Background(), `UPDATE localchain.transactions
		SET logs = NULL, units = NULL, pre_balances = NULL, post_balances = NULL WHERE signature = ?`, sig.String()); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetTransaction(f.context, sig, base64Confirmed)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.LogMessages == nil || len(got.Meta.LogMessages) != 0 || got.Meta.ComputeUnitsConsumed != nil || len(got.Meta.PreBalances) != 0 {
		t.Errorf("a transaction kept before its logs were: logs %#v, units %v, balances %v",
			got.Meta.LogMessages, got.Meta.ComputeUnitsConsumed, got.Meta.PreBalances)
	}
}
