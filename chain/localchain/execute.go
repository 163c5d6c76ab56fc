package localchain

import (
	"context"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
)

// Compute budget defaults, as the runtime applies them.
const (
	defaultUnitsPerInstruction = 200_000
	maxComputeUnits            = 1_400_000
)

// Compute units each instruction is reported to consume. The chain does not
// meter compute: these are what LiteSVM 1.5 (the programs mainnet runs,
// SPL Token as p-token) consumed for the same instructions, so that a
// limit taken from simulating here is one the real programs accept. A
// transaction whose estimate passes its limit fails, as it would there.
const (
	unitsComputeBudget  = 150    // each SetComputeUnitLimit, SetComputeUnitPrice
	unitsMemo           = 287    // and unitsMemoSigner per signer it names
	unitsMemoSigner     = 226    //
	unitsATAFound       = 4_437  // CreateIdempotent of an existing account
	unitsATACreate      = 13_525 // CreateIdempotent that opens it
	unitsATABumpTry     = 1_500  // each address tried before the bump (255 - bump)
	unitsTransfer       = 105    // Transfer or TransferChecked
	unitsCloseAccount   = 118    //
	unitsSystemTransfer = 150    //
)

// executed is what running a transaction took: its fee, the compute units
// it is reported to consume, and the price it paid per unit.
type executed struct {
	fee, units, price uint64
}

// invocation is one instruction with its resolved accounts.
type invocation struct {
	index    int
	program  solana.PublicKey
	accounts []solana.PublicKey
	data     []byte
	signer   func(solana.PublicKey) bool
	writable func(solana.PublicKey) bool
}

func (in invocation) fail(format string, args ...any) error {
	return simulationFailed("Error processing Instruction %d: %s", in.index, fmt.Sprintf(format, args...))
}

// execute charges the fee and runs every instruction of tx against s. It
// returns the fee, units and price, or an error that must roll everything
// back.
func execute(ctx context.Context, s *state, tx *solana.Transaction) (executed, error) {
	var none executed
	msg := tx.Message
	keys := msg.AccountKeys
	h := msg.Header
	isSigner := func(k solana.PublicKey) bool {
		for i := 0; i < int(h.NumRequiredSignatures) && i < len(keys); i++ {
			if keys[i].Equals(k) {
				return true
			}
		}
		return false
	}
	isWritable := func(k solana.PublicKey) bool {
		for i, key := range keys {
			if !key.Equals(k) {
				continue
			}
			if i < int(h.NumRequiredSignatures) {
				return i < int(h.NumRequiredSignatures-h.NumReadonlySignedAccounts)
			}
			return i < len(keys)-int(h.NumReadonlyUnsignedAccounts)
		}
		return false
	}

	var invocations []invocation
	units, price, budgetIxs := uint64(0), uint64(0), 0
	limitSet := false
	for i, ix := range msg.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) {
			return none, simulationFailed("instruction %d names a missing program account", i)
		}
		in := invocation{index: i, program: keys[ix.ProgramIDIndex], data: ix.Data, signer: isSigner, writable: isWritable}
		for _, a := range ix.Accounts {
			if int(a) >= len(keys) {
				return none, in.fail("invalid account index")
			}
			in.accounts = append(in.accounts, keys[a])
		}
		if in.program.Equals(chain.ComputeBudgetProgramID) {
			budgetIxs++
			switch {
			case len(in.data) == 5 && in.data[0] == 2:
				units, limitSet = uint64(binary.LittleEndian.Uint32(in.data[1:])), true
			case len(in.data) == 9 && in.data[0] == 3:
				price = binary.LittleEndian.Uint64(in.data[1:])
			default:
				return none, in.fail("invalid compute budget instruction")
			}
			continue
		}
		invocations = append(invocations, in)
	}
	if !limitSet {
		units = min(uint64(len(invocations))*defaultUnitsPerInstruction, maxComputeUnits)
	}
	fee := uint64(len(tx.Signatures))*FeePerSignature + (units*price+999_999)/1_000_000

	pre := make([]int64, len(keys))
	for i, k := range keys {
		acc, ok, err := s.account(ctx, k)
		if err != nil {
			return none, err
		}
		if ok {
			pre[i] = acc.Lamports
		}
	}

	payer := keys[0]
	acc, ok, err := s.account(ctx, payer)
	if err != nil {
		return none, err
	}
	if !ok || uint64(acc.Lamports) < fee {
		return none, simulationFailed("Attempt to debit an account but found no record of a prior credit.")
	}
	if err := s.setLamports(ctx, payer, acc.Lamports-int64(fee)); err != nil {
		return none, err
	}
	// The runtime validates the fee payer before running anything: a fee
	// that leaves it rent-paying refuses the transaction there.
	if acc.Owner == chain.SystemProgramID.String() && leftRentPaying(pre[0], acc.Lamports-int64(fee)) {
		return none, insufficientFundsForRent(0)
	}

	consumed := uint64(budgetIxs) * unitsComputeBudget
	for _, in := range invocations {
		var err error
		var used uint64
		switch {
		case in.program.Equals(chain.MemoProgramID):
			used, err = unitsMemo+unitsMemoSigner*uint64(len(in.accounts)), runMemo(in)
		case in.program.Equals(chain.ATAProgramID):
			used, err = runCreateATA(ctx, s, in)
		case in.program.Equals(chain.TokenProgramID):
			used, err = runToken(ctx, s, in)
		case in.program.Equals(chain.SystemProgramID):
			used, err = unitsSystemTransfer, runSystem(ctx, s, in)
		default:
			err = in.fail("program %s is not supported by the local chain", in.program)
		}
		if err != nil {
			return none, err
		}
		if consumed += used; consumed > units {
			return none, in.fail("Computational budget exceeded (%d units consumed, limit %d)", consumed, units)
		}
	}
	if err := checkRent(ctx, s, keys, pre); err != nil {
		return none, err
	}
	return executed{fee: fee, units: consumed, price: price}, nil
}

// checkRent is the runtime's rent check of System accounts (wallets, 0
// bytes of data), run once every instruction has: the first account of the
// message that the transaction left rent-paying (above 0 and below
// SystemAccountRent, which is RentExempt(0)) refuses the whole
// transaction with InsufficientFundsForRent, naming the account's index in
// the message. What is modelled, as LiteSVM applies it:
//   - a wallet debited below the minimum, whether by the fee (the fee
//     payer, checked right after the fee is charged), by the rent of a new
//     token account it funds, or by a System transfer: refused, unless it
//     ends with exactly 0 lamports;
//   - a new account created by a System transfer of fewer lamports than
//     the minimum: refused;
//   - a wallet that already held less than the minimum before the
//     transaction (only an airdrop can make one here): it may be credited
//     and stay below the minimum, and debiting it further is refused.
//
// Only the balances at the end count: a wallet may dip below the minimum
// between two instructions. Token accounts and the mint are not checked:
// they are created with their rent-exempt minimum and their lamports never
// change until they are closed.
func checkRent(ctx context.Context, s *state, keys []solana.PublicKey, pre []int64) error {
	for i, k := range keys {
		acc, ok, err := s.account(ctx, k)
		if err != nil {
			return err
		}
		if ok && acc.Owner == chain.SystemProgramID.String() && leftRentPaying(pre[i], acc.Lamports) {
			return insufficientFundsForRent(i)
		}
	}
	return nil
}

// leftRentPaying reports whether a System account that held pre lamports
// before the transaction and post after it breaks the rent rule: it ends
// rent-paying having been created or debited.
func leftRentPaying(pre, post int64) bool {
	rentPaying := post > 0 && post < SystemAccountRent
	return rentPaying && (pre == 0 || post < pre)
}

func insufficientFundsForRent(index int) error {
	return simulationFailed("Transaction results in an account (%d) with insufficient funds for rent", index)
}

func runMemo(in invocation) error {
	if !utf8.Valid(in.data) {
		return in.fail("memo is not valid UTF-8")
	}
	for _, a := range in.accounts {
		if !in.signer(a) {
			return in.fail("missing required signature for memo signer %s", a)
		}
	}
	return nil
}

// runCreateATA is the Associated Token Account program's Create (data
// empty or [0]) and CreateIdempotent ([1]).
func runCreateATA(ctx context.Context, s *state, in invocation) (uint64, error) {
	if len(in.accounts) < 6 {
		return 0, in.fail("not enough account keys")
	}
	idempotent := len(in.data) == 1 && in.data[0] == 1
	if !(len(in.data) == 0 || (len(in.data) == 1 && in.data[0] <= 1)) {
		return 0, in.fail("invalid instruction data")
	}
	payer, ata, owner, mint := in.accounts[0], in.accounts[1], in.accounts[2], in.accounts[3]
	if !in.accounts[5].Equals(chain.TokenProgramID) {
		return 0, in.fail("incorrect program id")
	}
	if !in.signer(payer) || !in.writable(payer) || !in.writable(ata) {
		return 0, in.fail("missing required signature or writable account")
	}
	addr, bump, err := solana.FindAssociatedTokenAddress(owner, mint)
	if err != nil || !addr.Equals(ata) {
		return 0, in.fail("Provided seeds do not result in a valid address")
	}
	if _, ok, err := s.mint(ctx, mint); err != nil {
		return 0, err
	} else if !ok {
		return 0, in.fail("invalid mint %s", mint)
	}
	existing, ok, err := s.tokenAccount(ctx, ata)
	if err != nil {
		return 0, err
	}
	if ok {
		if !idempotent {
			return 0, in.fail("account already in use")
		}
		if existing.Owner != owner.String() || existing.Mint != mint.String() {
			return 0, in.fail("invalid account owner")
		}
		return unitsATAFound + unitsATABumpTry*uint64(255-bump), nil
	}
	pay, ok, err := s.account(ctx, payer)
	if err != nil {
		return 0, err
	}
	if !ok || pay.Lamports < TokenAccountRent {
		return 0, in.fail("insufficient lamports for rent")
	}
	if err := s.setLamports(ctx, payer, pay.Lamports-TokenAccountRent); err != nil {
		return 0, err
	}
	if err := s.createAccount(ctx, ata, TokenAccountRent, chain.TokenProgramID); err != nil {
		return 0, err
	}
	if _, err := s.tx.NewInsert().Model(&tokenRow{Address: ata.String(), Mint: mint.String(), Owner: owner.String()}).
		Exec(ctx); err != nil {
		return 0, fmt.Errorf("record token account %s: %w", ata, err)
	}
	return unitsATACreate + unitsATABumpTry*uint64(255-bump), nil
}

// runToken is the SPL Token program's Transfer (3), TransferChecked (12)
// and CloseAccount (9).
func runToken(ctx context.Context, s *state, in invocation) (uint64, error) {
	if len(in.data) == 0 {
		return 0, in.fail("invalid instruction data")
	}
	if in.data[0] == 9 && len(in.data) == 1 && len(in.accounts) >= 3 {
		return unitsCloseAccount, runCloseAccount(ctx, s, in)
	}
	var src, dst, authority solana.PublicKey
	var mint *solana.PublicKey
	var amount uint64
	switch {
	case in.data[0] == 12 && len(in.data) == 10 && len(in.accounts) >= 4:
		src, dst, authority = in.accounts[0], in.accounts[2], in.accounts[3]
		m := in.accounts[1]
		mint = &m
		amount = binary.LittleEndian.Uint64(in.data[1:9])
		mr, ok, err := s.mint(ctx, m)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, in.fail("invalid mint")
		}
		if mr.Decimals != in.data[9] {
			return 0, in.fail("custom program error: 0x12") // MintDecimalsMismatch
		}
	case in.data[0] == 3 && len(in.data) == 9 && len(in.accounts) >= 3:
		src, dst, authority = in.accounts[0], in.accounts[1], in.accounts[2]
		amount = binary.LittleEndian.Uint64(in.data[1:9])
	default:
		return 0, in.fail("token instruction %d is not supported by the local chain", in.data[0])
	}
	if !in.writable(src) || !in.writable(dst) {
		return 0, in.fail("writable privilege escalated")
	}
	from, ok, err := s.tokenAccount(ctx, src)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, in.fail("invalid account data for instruction")
	}
	to, ok, err := s.tokenAccount(ctx, dst)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, in.fail("invalid account data for instruction")
	}
	if from.Owner != authority.String() {
		return 0, in.fail("custom program error: 0x4") // OwnerMismatch
	}
	if !in.signer(authority) {
		return 0, in.fail("missing required signature for instruction")
	}
	if from.Mint != to.Mint || (mint != nil && from.Mint != mint.String()) {
		return 0, in.fail("custom program error: 0x3") // MintMismatch
	}
	if uint64(from.Amount) < amount {
		return 0, in.fail("custom program error: 0x1") // InsufficientFunds
	}
	if src.Equals(dst) {
		return unitsTransfer, nil
	}
	if err := s.setTokenAmount(ctx, from.Address, from.Amount-int64(amount)); err != nil {
		return 0, err
	}
	return unitsTransfer, s.setTokenAmount(ctx, to.Address, to.Amount+int64(amount))
}

// runCloseAccount closes an empty token account: its owner signs, and its
// rent goes to the destination account.
func runCloseAccount(ctx context.Context, s *state, in invocation) error {
	addr, dest, owner := in.accounts[0], in.accounts[1], in.accounts[2]
	if !in.writable(addr) || !in.writable(dest) {
		return in.fail("writable privilege escalated")
	}
	acc, ok, err := s.tokenAccount(ctx, addr)
	if err != nil {
		return err
	}
	if !ok {
		return in.fail("invalid account data for instruction")
	}
	if acc.Owner != owner.String() {
		return in.fail("custom program error: 0x4") // OwnerMismatch
	}
	if !in.signer(owner) {
		return in.fail("missing required signature for instruction")
	}
	if acc.Amount != 0 {
		return in.fail("custom program error: 0xb") // NonNativeHasBalance
	}
	if addr.Equals(dest) {
		return in.fail("invalid account data for instruction")
	}
	rent, _, err := s.account(ctx, addr)
	if err != nil {
		return err
	}
	if _, err := s.tx.NewDelete().Model(&acc).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("delete token account %s: %w", addr, err)
	}
	if _, err := s.tx.NewDelete().Model(&rent).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("delete account %s: %w", addr, err)
	}
	to, ok, err := s.account(ctx, dest)
	if err != nil {
		return err
	}
	if !ok {
		return s.createAccount(ctx, dest, uint64(rent.Lamports), chain.SystemProgramID)
	}
	return s.setLamports(ctx, dest, to.Lamports+rent.Lamports)
}

// runSystem is the System program's Transfer (2).
func runSystem(ctx context.Context, s *state, in invocation) error {
	if len(in.data) != 12 || binary.LittleEndian.Uint32(in.data) != 2 || len(in.accounts) < 2 {
		return in.fail("system instruction is not supported by the local chain")
	}
	from, to := in.accounts[0], in.accounts[1]
	lamports := int64(binary.LittleEndian.Uint64(in.data[4:]))
	if !in.signer(from) || !in.writable(from) || !in.writable(to) {
		return in.fail("missing required signature for instruction")
	}
	src, ok, err := s.account(ctx, from)
	if err != nil {
		return err
	}
	if !ok || src.Lamports < lamports {
		return in.fail("custom program error: 0x1")
	}
	if err := s.setLamports(ctx, from, src.Lamports-lamports); err != nil {
		return err
	}
	dst, ok, err := s.account(ctx, to)
	if err != nil {
		return err
	}
	if !ok {
		return s.createAccount(ctx, to, uint64(lamports), chain.SystemProgramID)
	}
	return s.setLamports(ctx, to, dst.Lamports+lamports)
}
