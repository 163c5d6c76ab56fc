package localnet_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"wager/chain"
	"wager/e2e/localnet"
)

const (
	decimals     = 6
	aliceTokens  = 5_000_000
	payerLamport = 1_000_000_000
	cuLimit      = 200_000
	cuPrice      = 1_000 // micro-lamports per compute unit
)

var computeBudgetProgramID = solana.MustPublicKeyFromBase58("ComputeBudget111111111111111111111111111111")

// world is a localnet with a mint, Alice holding aliceTokens in her
// associated token account, Bob with none, and a separate fee payer.
type world struct {
	ln                *localnet.Localnet
	rpc               *rpc.Client
	mint              solana.PublicKey
	alice, bob, payer solana.PrivateKey
	aliceATA, bobATA  solana.PublicKey
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ln := localnet.Start(t)
	w := &world{
		ln:    ln,
		rpc:   ln.RPC(),
		alice: mustKey(t),
		bob:   mustKey(t),
		payer: mustKey(t),
	}
	mintKey := mustKey(t)
	w.mint = mintKey.PublicKey()
	w.aliceATA = ata(t, w.alice.PublicKey(), w.mint)
	w.bobATA = ata(t, w.bob.PublicKey(), w.mint)

	ln.CreateMint(t, w.mint, decimals, mustKey(t).PublicKey())
	ln.MintTo(t, w.mint, w.alice.PublicKey(), aliceTokens)
	sig, err := w.rpc.RequestAirdrop(context.Background(), w.payer.PublicKey(), payerLamport, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatalf("airdrop: %v", err)
	}
	w.waitConfirmed(t, sig)
	return w
}

func mustKey(t testing.TB) solana.PrivateKey {
	t.Helper()
	k, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ata(t testing.TB, owner, mint solana.PublicKey) solana.PublicKey {
	t.Helper()
	a, _, err := solana.FindAssociatedTokenAddress(owner, mint)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func setComputeUnitLimit(units uint32) solana.Instruction {
	data := binary.LittleEndian.AppendUint32([]byte{2}, units)
	return solana.NewInstruction(computeBudgetProgramID, solana.AccountMetaSlice{}, data)
}

func setComputeUnitPrice(microLamports uint64) solana.Instruction {
	data := binary.LittleEndian.AppendUint64([]byte{3}, microLamports)
	return solana.NewInstruction(computeBudgetProgramID, solana.AccountMetaSlice{}, data)
}

// createATAIdempotent is the Associated Token Account program's
// CreateIdempotent instruction (discriminator 1).
func createATAIdempotent(payer, ataAddr, owner, mint solana.PublicKey) solana.Instruction {
	return solana.NewInstruction(solana.SPLAssociatedTokenAccountProgramID, solana.AccountMetaSlice{
		solana.Meta(payer).WRITE().SIGNER(),
		solana.Meta(ataAddr).WRITE(),
		solana.Meta(owner),
		solana.Meta(mint),
		solana.Meta(solana.SystemProgramID),
		solana.Meta(solana.TokenProgramID),
	}, []byte{1})
}

func memo(text string, signer solana.PublicKey) solana.Instruction {
	return solana.NewInstruction(solana.MemoProgramID, solana.AccountMetaSlice{solana.Meta(signer).SIGNER()}, []byte(text))
}

// transfer builds (unsigned) the payment the Go server sends: compute budget,
// create Bob's ATA if needed, TransferChecked from Alice, and a memo signed
// by Alice, all paid by the fee payer.
func (w *world) transfer(t testing.TB, blockhash solana.Hash, amount uint64, note string) *solana.Transaction {
	t.Helper()
	tx, err := solana.NewTransaction([]solana.Instruction{
		setComputeUnitLimit(cuLimit),
		setComputeUnitPrice(cuPrice),
		createATAIdempotent(w.payer.PublicKey(), w.bobATA, w.bob.PublicKey(), w.mint),
		token.NewTransferCheckedInstruction(amount, decimals, w.aliceATA, w.mint, w.bobATA, w.alice.PublicKey(), nil).Build(),
		memo(note, w.alice.PublicKey()),
	}, blockhash, solana.TransactionPayer(w.payer.PublicKey()))
	if err != nil {
		t.Fatalf("build transaction: %v", err)
	}
	return tx
}

func (w *world) signers(keys ...solana.PrivateKey) func(solana.PublicKey) *solana.PrivateKey {
	return func(pub solana.PublicKey) *solana.PrivateKey {
		for i := range keys {
			if keys[i].PublicKey().Equals(pub) {
				return &keys[i]
			}
		}
		return nil
	}
}

func (w *world) signedTransfer(t testing.TB, blockhash solana.Hash, amount uint64, note string) *solana.Transaction {
	t.Helper()
	tx := w.transfer(t, blockhash, amount, note)
	if _, err := tx.Sign(w.signers(w.payer, w.alice)); err != nil {
		t.Fatalf("sign: %v", err)
	}
	return tx
}

func (w *world) blockhash(t testing.TB) solana.Hash {
	t.Helper()
	res, err := w.rpc.GetLatestBlockhash(context.Background(), rpc.CommitmentFinalized)
	if err != nil {
		t.Fatalf("getLatestBlockhash: %v", err)
	}
	return res.Value.Blockhash
}

var sendOpts = rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentFinalized}

func (w *world) send(tx *solana.Transaction) (solana.Signature, error) {
	return w.rpc.SendTransactionWithOpts(context.Background(), tx, sendOpts)
}

func (w *world) waitConfirmed(t testing.TB, sig solana.Signature) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := w.rpc.GetSignatureStatuses(context.Background(), false, sig)
		if err != nil {
			t.Fatalf("getSignatureStatuses: %v", err)
		}
		if len(res.Value) != 1 {
			t.Fatalf("getSignatureStatuses: %d values, want 1", len(res.Value))
		}
		if st := res.Value[0]; st != nil {
			if st.Err != nil {
				t.Fatalf("transaction %s failed: %v", sig, st.Err)
			}
			if st.ConfirmationStatus != rpc.ConfirmationStatusFinalized {
				t.Fatalf("transaction %s: confirmation status %q", sig, st.ConfirmationStatus)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction %s not confirmed within 5s", sig)
		}
		time.Sleep(time.Millisecond)
	}
}

func (w *world) tokenBalance(t testing.TB, account solana.PublicKey) string {
	t.Helper()
	res, err := w.rpc.GetTokenAccountBalance(context.Background(), account, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatalf("getTokenAccountBalance %s: %v", account, err)
	}
	if res.Value.Decimals != decimals {
		t.Fatalf("getTokenAccountBalance %s: decimals %d, want %d", account, res.Value.Decimals, decimals)
	}
	return res.Value.Amount
}

func (w *world) lamports(t testing.TB, account solana.PublicKey) uint64 {
	t.Helper()
	res, err := w.rpc.GetBalance(context.Background(), account, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatalf("getBalance %s: %v", account, err)
	}
	return res.Value
}

// wantRPCError asserts err is a JSON-RPC error with the code and a message
// containing text.
func wantRPCError(t testing.TB, what string, err error, code int, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted, want JSON-RPC error %d %q", what, code, text)
	}
	var rpcErr *jsonrpc.RPCError
	if !errors.As(err, &rpcErr) {
		t.Fatalf("%s: error %v (%T), want a JSON-RPC error", what, err, err)
	}
	if rpcErr.Code != code || !strings.Contains(rpcErr.Message, text) {
		t.Fatalf("%s: JSON-RPC error %d %q, want %d containing %q (data %v)", what, rpcErr.Code, rpcErr.Message, code, text, rpcErr.Data)
	}
	t.Logf("%s: refused: %d %s", what, rpcErr.Code, rpcErr.Message)
}

func TestTransferAndRejections(t *testing.T) {
	r := firstTransfer(t, newWorld(t))
	t.Run("replay", r.replay)
	t.Run("tampered amount", r.tamperedAmount)
	t.Run("missing owner signature", r.missingOwnerSignature)
	t.Run("expired blockhash", r.expiredBlockhash)
	t.Run("more than the balance", r.moreThanTheBalance)
	t.Run("exact balance still moves", r.exactBalanceStillMoves)
}

// afterTransfer is the chain after Alice's first transfer to Bob (tx),
// which cost the fee payer fee and Bob's account's rent and left it
// payerAfter lamports.
type afterTransfer struct {
	w          *world
	tx         *solana.Transaction
	fee        uint64
	payerAfter uint64
}

// firstTransfer checks the accounts before Alice's first transfer to Bob,
// sends it through the real programs, and checks the balances and the fee
// payer's cost after it, and Bob's new token account.
func firstTransfer(t *testing.T, w *world) *afterTransfer {
	t.Helper()
	ctx := context.Background()

	if got := w.tokenBalance(t, w.aliceATA); got != "5000000" {
		t.Fatalf("Alice starts with %s, want 5000000", got)
	}
	if _, err := w.rpc.GetTokenAccountBalance(ctx, w.bobATA, rpc.CommitmentFinalized); err == nil {
		t.Fatal("Bob's ATA exists before the transfer")
	} else {
		wantRPCError(t, "balance of a missing account", err, -32602, "could not find account")
	}

	ataRent, err := w.rpc.GetMinimumBalanceForRentExemption(ctx, 165, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	payerBefore := w.lamports(t, w.payer.PublicKey())
	if payerBefore != payerLamport {
		t.Fatalf("fee payer has %d lamports, want %d", payerBefore, payerLamport)
	}

	// The payment: real ComputeBudget, ATA, Token and Memo programs.
	tx := w.signedTransfer(t, w.blockhash(t), 1_250_000, "order 42")
	sig, err := w.send(tx)
	if err != nil {
		t.Fatalf("send transfer: %v", err)
	}
	if sig != tx.Signatures[0] {
		t.Fatalf("sendTransaction answered %s, want the fee payer's signature %s", sig, tx.Signatures[0])
	}
	w.waitConfirmed(t, sig)
	if got := w.tokenBalance(t, w.aliceATA); got != "3750000" {
		t.Fatalf("Alice has %s after the transfer, want 3750000", got)
	}
	if got := w.tokenBalance(t, w.bobATA); got != "1250000" {
		t.Fatalf("Bob has %s after the transfer, want 1250000", got)
	}
	// Two signatures at 5000 lamports, the priority fee (limit x price,
	// rounded up to lamports), and the rent of Bob's new token account.
	fee := uint64(2*5000 + (cuLimit*cuPrice+999_999)/1_000_000)
	paid := payerBefore - w.lamports(t, w.payer.PublicKey())
	if paid != fee+ataRent {
		t.Fatalf("fee payer paid %d lamports, want fee %d + ATA rent %d = %d", paid, fee, ataRent, fee+ataRent)
	}
	payerAfter := payerBefore - paid

	w.wantBobsTokenAccount(t)
	return &afterTransfer{w: w, tx: tx, fee: fee, payerAfter: payerAfter}
}

// wantBobsTokenAccount checks that Bob's ATA exists and decodes as a token
// account owned by Bob, holding the first transfer.
func (w *world) wantBobsTokenAccount(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	info, err := w.rpc.GetAccountInfoWithOpts(ctx, w.bobATA, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentFinalized})
	if err != nil {
		t.Fatalf("getAccountInfo Bob's ATA: %v", err)
	}
	var acc token.Account
	if err := bin.NewBinDecoder(info.Value.Data.GetBinary()).Decode(&acc); err != nil {
		t.Fatalf("decode Bob's token account: %v", err)
	}
	if !info.Value.Owner.Equals(solana.TokenProgramID) || !acc.Owner.Equals(w.bob.PublicKey()) || !acc.Mint.Equals(w.mint) || acc.Amount != 1_250_000 {
		t.Fatalf("Bob's ATA: program owner %s, token owner %s, mint %s, amount %d", info.Value.Owner, acc.Owner, acc.Mint, acc.Amount)
	}
}

// unchanged checks that Alice, Bob and the fee payer hold what they did
// after the first transfer.
func (r *afterTransfer) unchanged(t *testing.T, what string) {
	t.Helper()
	w := r.w
	if got := w.tokenBalance(t, w.aliceATA); got != "3750000" {
		t.Fatalf("%s: Alice has %s, want 3750000", what, got)
	}
	if got := w.tokenBalance(t, w.bobATA); got != "1250000" {
		t.Fatalf("%s: Bob has %s, want 1250000", what, got)
	}
	if got := w.lamports(t, w.payer.PublicKey()); got != r.payerAfter {
		t.Fatalf("%s: fee payer has %d lamports, want %d", what, got, r.payerAfter)
	}
}

// statusUnknown checks that the chain has no status for sig.
func (r *afterTransfer) statusUnknown(t *testing.T, what string, sig solana.Signature) {
	t.Helper()
	res, err := r.w.rpc.GetSignatureStatuses(context.Background(), false, sig)
	if err != nil {
		t.Fatalf("%s: getSignatureStatuses: %v", what, err)
	}
	if len(res.Value) != 1 || res.Value[0] != nil {
		t.Fatalf("%s: signature %s has a status, want null", what, sig)
	}
}

// replay checks that the first transfer sent again is refused as processed.
func (r *afterTransfer) replay(t *testing.T) {
	_, err := r.w.send(r.tx)
	wantRPCError(t, "replayed transaction", err, -32002, "already been processed")
	r.unchanged(t, "replay")
}

// tamperedAmount checks that a transfer whose amount changed after signing
// fails verification.
func (r *afterTransfer) tamperedAmount(t *testing.T) {
	ctx := context.Background()
	tx := r.w.signedTransfer(t, r.w.blockhash(t), 1_000, "tampered")
	wire, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// TransferChecked data: discriminator 12, amount u64 LE, decimals.
	data := append(binary.LittleEndian.AppendUint64([]byte{12}, 1_000), decimals)
	i := bytes.Index(wire, data)
	if i < 0 || bytes.Contains(wire[i+1:], data) {
		t.Fatalf("TransferChecked data %x not found exactly once in the wire bytes", data)
	}
	wire[i+2] ^= 0x01 // 1_000 -> 1_000 + 256
	_, err = r.w.rpc.SendEncodedTransactionWithOpts(ctx, base64.StdEncoding.EncodeToString(wire), sendOpts)
	wantRPCError(t, "tampered transaction", err, -32003, "signature verification failure")
	r.statusUnknown(t, "tampered", tx.Signatures[0])
	r.unchanged(t, "tampered")
}

// missingOwnerSignature checks that a transfer that Alice did not sign fails
// verification.
func (r *afterTransfer) missingOwnerSignature(t *testing.T) {
	tx := r.w.transfer(t, r.w.blockhash(t), 1_000, "unsigned by alice")
	if _, err := tx.PartialSign(r.w.signers(r.w.payer)); err != nil {
		t.Fatal(err)
	}
	if len(tx.Signatures) != 2 || !tx.Signatures[1].IsZero() {
		t.Fatalf("want 2 signatures with Alice's zero, got %v", tx.Signatures)
	}
	_, err := r.w.send(tx)
	wantRPCError(t, "transaction without Alice's signature", err, -32003, "signature verification failure")
	r.statusUnknown(t, "missing signature", tx.Signatures[0])
	r.unchanged(t, "missing signature")
}

// expiredBlockhash checks that a transfer on an expired blockhash is refused.
func (r *afterTransfer) expiredBlockhash(t *testing.T) {
	ctx := context.Background()
	old := r.w.blockhash(t)
	r.w.ln.ExpireBlockhash(t)
	fresh := r.w.blockhash(t)
	if fresh == old {
		t.Fatal("blockhash did not change after ExpireBlockhash")
	}
	valid, err := r.w.rpc.IsBlockhashValid(ctx, old, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	if valid.Value {
		t.Fatal("isBlockhashValid: expired blockhash reported valid")
	}
	tx := r.w.signedTransfer(t, old, 1_000, "stale")
	_, err = r.w.send(tx)
	wantRPCError(t, "transaction on an expired blockhash", err, -32002, "Blockhash not found")
	r.statusUnknown(t, "expired blockhash", tx.Signatures[0])
	r.unchanged(t, "expired blockhash")
}

// moreThanTheBalance checks that a transfer of more than Alice holds fails in
// the token program.
func (r *afterTransfer) moreThanTheBalance(t *testing.T) {
	tx := r.w.signedTransfer(t, r.w.blockhash(t), 3_750_001, "too much")
	_, err := r.w.send(tx)
	// SPL Token error 1 is InsufficientFunds; TransferChecked is instruction 3.
	wantRPCError(t, "overdraft", err, -32002, "Error processing Instruction 3: custom program error: 0x1")
	var rpcErr *jsonrpc.RPCError
	errors.As(err, &rpcErr)
	if s := fmt.Sprint(rpcErr.Data); !strings.Contains(s, "insufficient funds") {
		t.Fatalf("overdraft: error data %s lacks the token program's log", s)
	}
	r.statusUnknown(t, "overdraft", tx.Signatures[0])
	r.unchanged(t, "overdraft")
}

// exactBalanceStillMoves checks that a transfer of all Alice holds moves, for
// the fee alone.
func (r *afterTransfer) exactBalanceStillMoves(t *testing.T) {
	tx := r.w.signedTransfer(t, r.w.blockhash(t), 3_750_000, "all of it")
	sig, err := r.w.send(tx)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	r.w.waitConfirmed(t, sig)
	if got := r.w.tokenBalance(t, r.w.aliceATA); got != "0" {
		t.Fatalf("Alice has %s, want 0", got)
	}
	if got := r.w.tokenBalance(t, r.w.bobATA); got != "5000000" {
		t.Fatalf("Bob has %s, want 5000000", got)
	}
	// Bob's ATA exists now: CreateIdempotent costs no rent this time.
	if got, want := r.payerAfter-r.w.lamports(t, r.w.payer.PublicKey()), r.fee; got != want {
		t.Fatalf("fee payer paid %d, want %d", got, want)
	}
}

func TestRPCShapes(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()

	if h, err := w.rpc.GetHealth(ctx); err != nil || h != rpc.HealthOk {
		t.Fatalf("getHealth: %q, %v", h, err)
	}
	if v, err := w.rpc.GetVersion(ctx); err != nil || v.SolanaCore == "" {
		t.Fatalf("getVersion: %+v, %v", v, err)
	}
	slot, err := w.rpc.GetSlot(ctx, rpc.CommitmentFinalized)
	if err != nil || slot == 0 {
		t.Fatalf("getSlot: %d, %v", slot, err)
	}
	bh, err := w.rpc.GetLatestBlockhash(ctx, rpc.CommitmentFinalized)
	if err != nil || bh.Value.Blockhash.IsZero() || bh.Value.LastValidBlockHeight <= slot {
		t.Fatalf("getLatestBlockhash: %+v, %v", bh, err)
	}
	if valid, err := w.rpc.IsBlockhashValid(ctx, bh.Value.Blockhash, rpc.CommitmentFinalized); err != nil || !valid.Value {
		t.Fatalf("isBlockhashValid(current): %+v, %v", valid, err)
	}
	if rent, err := w.rpc.GetMinimumBalanceForRentExemption(ctx, 82, ""); err != nil || rent != 1_461_600 {
		t.Fatalf("getMinimumBalanceForRentExemption(82): %d, %v", rent, err)
	}

	// A missing account: null value, which solana-go reports as ErrNotFound.
	missing := mustKey(t).PublicKey()
	_, err = w.rpc.GetAccountInfoWithOpts(ctx, missing, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentFinalized})
	if !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("getAccountInfo of a missing account: %v, want rpc.ErrNotFound", err)
	}
	if got := w.lamports(t, missing); got != 0 {
		t.Fatalf("getBalance of a missing account: %d", got)
	}
	unknown, err := w.rpc.GetSignatureStatuses(ctx, true, solana.Signature{1, 2, 3})
	if err != nil || len(unknown.Value) != 1 || unknown.Value[0] != nil {
		t.Fatalf("getSignatureStatuses(unknown): %+v, %v", unknown, err)
	}

	// The mint written by CreateMint decodes with solana-go's token package.
	info, err := w.rpc.GetAccountInfoWithOpts(ctx, w.mint, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64})
	if err != nil {
		t.Fatalf("getAccountInfo mint: %v", err)
	}
	var mint token.Mint
	if err := bin.NewBinDecoder(info.Value.Data.GetBinary()).Decode(&mint); err != nil {
		t.Fatalf("decode mint: %v", err)
	}
	if !mint.IsInitialized || mint.Decimals != decimals || mint.Supply != aliceTokens || mint.MintAuthority == nil || mint.FreezeAuthority != nil {
		t.Fatalf("mint: %+v", mint)
	}
	if info.Value.RentEpoch == nil || info.Value.RentEpoch.String() != "18446744073709551615" {
		t.Fatalf("mint rentEpoch %v", info.Value.RentEpoch)
	}

	// u64 amounts beyond 2^53 survive JSON and JavaScript exactly.
	big := uint64(1)<<60 + 1
	w.ln.MintTo(t, w.mint, w.bob.PublicKey(), big)
	if got := w.tokenBalance(t, w.bobATA); got != fmt.Sprint(big) {
		t.Fatalf("Bob has %s, want %d", got, big)
	}
	// MintTo tops up an existing account.
	w.ln.MintTo(t, w.mint, w.alice.PublicKey(), 1)
	if got := w.tokenBalance(t, w.aliceATA); got != "5000001" {
		t.Fatalf("Alice has %s after a top-up, want 5000001", got)
	}

	// Invalid input answers JSON-RPC errors and leaves the shim running.
	var rpcErr *localnet.RPCError
	if err := w.ln.Call(ctx, "noSuchMethod", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32601 {
		t.Fatalf("unknown method: %v", err)
	}
	if err := w.ln.Call(ctx, "getBalance", []any{"not a key"}, nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32602 {
		t.Fatalf("bad address: %v", err)
	}
	_, err = w.rpc.SendEncodedTransactionWithOpts(ctx, base64.StdEncoding.EncodeToString([]byte{1, 2, 3}), sendOpts)
	wantRPCError(t, "garbage transaction", err, -32602, "failed to deserialize")
	if h, err := w.rpc.GetHealth(ctx); err != nil || h != rpc.HealthOk {
		t.Fatalf("getHealth after bad input: %q, %v", h, err)
	}
}

// BenchmarkTransfer measures one payment round trip through the shim:
// sign, sendTransaction, then getSignatureStatuses until confirmed.
func BenchmarkTransfer(b *testing.B) {
	w := newWorld(b)
	bh := w.blockhash(b)
	w.ln.MintTo(b, w.mint, w.alice.PublicKey(), uint64(b.N))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := w.signedTransfer(b, bh, 1, fmt.Sprintf("bench %d", i))
		sig, err := w.send(tx)
		if err != nil {
			b.Fatalf("send %d: %v", i, err)
		}
		w.waitConfirmed(b, sig)
	}
	b.StopTimer()
	if got, want := w.tokenBalance(b, w.bobATA), fmt.Sprint(b.N); got != want {
		b.Fatalf("Bob has %s, want %s", got, want)
	}
}

// With finalize slots, the localnet reports a transaction confirmed until
// that many more slots (transactions) have passed, then finalized, as a
// cluster finalizes a block some slots after voting on it; the platform's
// client calls it landed only at its commitment.
func TestATransactionIsFinalizedSlotsAfterItIsConfirmed(t *testing.T) {
	ln := localnet.StartWith(t, localnet.Options{FinalizeSlots: 2})
	ctx := context.Background()
	client := &chain.Client{RPC: ln.RPC(), Commitment: rpc.CommitmentFinalized}
	sig, err := client.RPC.RequestAirdrop(ctx, mustKey(t).PublicKey(), payerLamport, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	statusOf := func() rpc.ConfirmationStatusType {
		t.Helper()
		res, err := client.RPC.GetSignatureStatuses(ctx, false, sig)
		if err != nil || len(res.Value) != 1 || res.Value[0] == nil {
			t.Fatalf("status of %s: %v %+v", sig, err, res)
		}
		return res.Value[0].ConfirmationStatus
	}
	for i := range 3 {
		landed, err := client.Status(ctx, sig)
		if err != nil {
			t.Fatal(err)
		}
		switch want := i == 2; {
		case i < 2 && statusOf() != rpc.ConfirmationStatusConfirmed:
			t.Errorf("after %d more slots: %s, want confirmed", i, statusOf())
		case i == 2 && statusOf() != rpc.ConfirmationStatusFinalized:
			t.Errorf("after 2 more slots: %s, want finalized", statusOf())
		case landed != want:
			t.Errorf("after %d more slots: landed at finalized %t, want %t", i, landed, want)
		}
		ln.Airdrop(t, mustKey(t).PublicKey(), payerLamport) // a slot passes
	}
}
