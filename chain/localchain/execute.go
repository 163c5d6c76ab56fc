package localchain

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
)

// Compute budget defaults, as the runtime applies them: without a
// SetComputeUnitLimit, each instruction of a builtin program (ComputeBudget,
// System) adds builtinUnitsPerInstruction to the budget and every other one
// defaultUnitsPerInstruction.
const (
	defaultUnitsPerInstruction = 200_000
	builtinUnitsPerInstruction = 3_000
	maxComputeUnits            = 1_400_000
)

// Compute units each instruction is reported to consume. The chain does not
// meter compute: these are what LiteSVM 1.5 (the programs mainnet runs,
// SPL Token as p-token) consumed for the same instructions, so that a
// limit taken from simulating here is one the real programs accept. A
// transaction whose estimate passes its limit fails, as it would there.
// The Memo program is the exception: LiteSVM runs a Pinocchio build of it,
// whose units memoUnits gives, while the SPL Memo v3 that clusters run
// consumed 39,489 units for a 69-byte checkpoint memo with one signer (513
// here), more for each character it escapes.
const (
	unitsComputeBudget  = 150    // each SetComputeUnitLimit, SetComputeUnitPrice
	unitsATAFound       = 4_437  // CreateIdempotent of an existing account
	unitsATACreate      = 13_525 // CreateIdempotent that opens it
	unitsATABumpTry     = 1_500  // each address tried before the bump (255 - bump)
	unitsTransfer       = 105    // Transfer or TransferChecked
	unitsCloseAccount   = 118    //
	unitsSystemTransfer = 150    //
)

// memoUnits is what LiteSVM's Memo program consumes for a memo of n bytes
// that names signers accounts: a log call costs the larger of 100 units and
// its length, formatting the length 13 units a digit, and the signers'
// header and each signer's address a fixed amount.
func memoUnits(n, signers int) uint64 {
	const (
		empty       = 232 // a memo of no bytes
		base        = 161
		perDigit    = 13
		logCall     = 100
		signersHead = 111
		perSigner   = 115
	)
	units := uint64(empty)
	if n > 0 {
		units = base + perDigit*uint64(len(strconv.Itoa(n))) + max(logCall, uint64(n))
	}
	if signers > 0 {
		units += signersHead + perSigner*uint64(signers)
	}
	return units
}

// executed is what running a transaction took: its fee, the compute units
// it is reported to consume, the price it paid per unit, the log messages a
// validator would have written, and the lamports of each account of its
// message before and after it.
type executed struct {
	fee, units, price uint64
	logs              []string
	pre, post         []int64
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
	invocations, units, price, err := invocationsOf(tx)
	if err != nil {
		return executed{}, err
	}
	fee := uint64(len(tx.Signatures))*FeePerSignature + (units*price+999_999)/1_000_000
	keys := tx.Message.AccountKeys
	pre, err := chargeFee(ctx, s, keys, fee)
	if err != nil {
		return executed{}, err
	}
	consumed, logs, err := run(ctx, s, invocations, units)
	if err != nil {
		return executed{}, err
	}
	post, err := checkRent(ctx, s, keys, pre)
	if err != nil {
		return executed{}, err
	}
	return executed{fee: fee, units: consumed, price: price, logs: logs, pre: pre, post: post}, nil
}

// invocationsOf resolves tx's instructions and reads its compute budget:
// the unit limit (the runtime's default without a SetComputeUnitLimit)
// and the price.
func invocationsOf(tx *solana.Transaction) (invocations []invocation, units, price uint64, err error) {
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
	builtins, limitSet := 0, false
	for i, ix := range msg.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) {
			return nil, 0, 0, simulationFailed("instruction %d names a missing program account", i)
		}
		in := invocation{index: i, program: keys[ix.ProgramIDIndex], data: ix.Data, signer: isSigner, writable: isWritable}
		for _, a := range ix.Accounts {
			if int(a) >= len(keys) {
				return nil, 0, 0, in.fail("invalid account index")
			}
			in.accounts = append(in.accounts, keys[a])
		}
		if isBuiltin(in.program) {
			builtins++
		}
		if in.program.Equals(chain.ComputeBudgetProgramID) {
			switch {
			case len(in.data) == 5 && in.data[0] == 2:
				units, limitSet = uint64(binary.LittleEndian.Uint32(in.data[1:])), true
			case len(in.data) == 9 && in.data[0] == 3:
				price = binary.LittleEndian.Uint64(in.data[1:])
			default:
				return nil, 0, 0, in.fail("invalid compute budget instruction")
			}
		}
		invocations = append(invocations, in)
	}
	if !limitSet {
		others := uint64(len(invocations) - builtins)
		units = min(others*defaultUnitsPerInstruction+uint64(builtins)*builtinUnitsPerInstruction, maxComputeUnits)
	}
	return invocations, units, price, nil
}

// chargeFee takes the fee from the payer (keys[0]) and returns the
// lamports of every account of the message before the transaction.
func chargeFee(ctx context.Context, s *state, keys []solana.PublicKey, fee uint64) ([]int64, error) {
	pre := make([]int64, len(keys))
	for i, k := range keys {
		acc, ok, err := s.account(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok {
			pre[i] = acc.Lamports
		}
	}
	payer := keys[0]
	acc, ok, err := s.account(ctx, payer)
	if err != nil {
		return nil, err
	}
	if !ok || uint64(acc.Lamports) < fee {
		return nil, simulationFailed("Attempt to debit an account but found no record of a prior credit.")
	}
	if err := s.setLamports(ctx, payer, acc.Lamports-int64(fee)); err != nil {
		return nil, err
	}
	// The runtime validates the fee payer before running anything: a fee
	// that leaves it rent-paying refuses the transaction there.
	if acc.Owner == chain.SystemProgramID.String() && leftRentPaying(pre[0], acc.Lamports-int64(fee)) {
		return nil, insufficientFundsForRent(0)
	}
	return pre, nil
}

// run runs the instructions in order within units, each logged as a
// validator logs it: invoke, what the program itself logs, the units it
// consumed of those left (not for builtins), success. Only the Memo
// program's own lines are modelled: on a cluster the ATA program also logs
// its instruction's name and the calls it makes into the Token and System
// programs (with their own lines), and LiteSVM's SPL Token logs nothing of
// its own. It returns the units consumed and the logs.
func run(ctx context.Context, s *state, invocations []invocation, units uint64) (uint64, []string, error) {
	var consumed uint64
	logs := make([]string, 0, 4*len(invocations))
	for _, in := range invocations {
		var err error
		var used uint64
		var own []string
		switch {
		case in.program.Equals(chain.ComputeBudgetProgramID):
			used = unitsComputeBudget
		case in.program.Equals(chain.MemoProgramID):
			used = memoUnits(len(in.data), len(in.accounts))
			own, err = runMemo(in)
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
			return 0, nil, err
		}
		left := units - consumed
		if consumed += used; consumed > units {
			return 0, nil, in.fail("Computational budget exceeded (%d units consumed, limit %d)", consumed, units)
		}
		logs = append(logs, invokeLog(in.program))
		logs = append(logs, own...)
		if !isBuiltin(in.program) {
			logs = append(logs, consumedLog(in.program, used, left))
		}
		logs = append(logs, successLog(in.program))
	}
	return consumed, logs, nil
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
// change until they are closed. It returns each account's lamports at the
// end (0 for one that does not exist).
func checkRent(ctx context.Context, s *state, keys []solana.PublicKey, pre []int64) ([]int64, error) {
	post := make([]int64, len(keys))
	for i, k := range keys {
		acc, ok, err := s.account(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok && acc.Owner == chain.SystemProgramID.String() && leftRentPaying(pre[i], acc.Lamports) {
			return nil, insufficientFundsForRent(i)
		}
		post[i] = acc.Lamports
	}
	return post, nil
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

// runMemo checks a memo as the Memo program does (every account it names
// signed, the text UTF-8) and returns what the program logs.
func runMemo(in invocation) ([]string, error) {
	if !utf8.Valid(in.data) {
		return nil, in.fail("memo is not valid UTF-8")
	}
	for _, a := range in.accounts {
		if !in.signer(a) {
			return nil, in.fail("missing required signature for memo signer %s", a)
		}
	}
	return memoLogs(in.accounts, string(in.data)), nil
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
