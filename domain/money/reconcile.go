package money

import (
	"context"
	"fmt"
	"strings"

	"github.com/gagliardetto/solana-go"
)

// AddressCheck compares one platform-controlled address's USDC on chain
// with what the ledger says it should hold.
type AddressCheck struct {
	Label           string `json:"label"`
	Address         string `json:"address"`
	ChainMinor      int64  `json:"chainMinor"`
	LedgerMinor     int64  `json:"ledgerMinor"`
	DifferenceMinor int64  `json:"differenceMinor" doc:"chain minus ledger; 0 when they agree"`
	// Anyone can send USDC to a platform address: more on chain than in
	// the ledger is money nobody is owed, less is money missing.
	UnattributedMinor int64 `json:"unattributedMinor" minimum:"0" doc:"USDC on chain beyond the ledger (arrived without a matching intent; nobody's balance); 0 otherwise. It does not unbalance the books"`
	ShortfallMinor    int64 `json:"shortfallMinor" minimum:"0" doc:"USDC the ledger says the address holds and the chain does not; 0 otherwise. Any shortfall unbalances the books"`
}

// Reconciliation is the state of the books.
type Reconciliation struct {
	LedgerTotalMinor  int64          `json:"ledgerTotalMinor" doc:"sum of all account balances; must be 0"`
	EntriesTotalMinor int64          `json:"entriesTotalMinor" doc:"sum of all entries; must be 0"`
	Addresses         []AddressCheck `json:"addresses"`
	Balanced          bool           `json:"balanced" doc:"true when both totals are 0 and no address holds less on chain than in the ledger (unattributed USDC does not count against it)"`
}

// checkAddress compares an address's chain balance with its ledger
// balance (what the ledger says it holds).
func checkAddress(label, address string, chainMinor, ledgerMinor int64) AddressCheck {
	c := AddressCheck{Label: label, Address: address, ChainMinor: chainMinor, LedgerMinor: ledgerMinor,
		DifferenceMinor: chainMinor - ledgerMinor}
	if c.DifferenceMinor > 0 {
		c.UnattributedMinor = c.DifferenceMinor
	} else {
		c.ShortfallMinor = -c.DifferenceMinor
	}
	return c
}

// Reconcile reports the ledger's totals and, for every platform-controlled
// address, its chain balance against its ledger balance. It returns
// UNAVAILABLE when the chain cannot be read.
func (s *Service) Reconcile(ctx context.Context) (Reconciliation, error) {
	var r Reconciliation
	var err error
	if r.LedgerTotalMinor, r.EntriesTotalMinor, err = Totals(ctx, s.db); err != nil {
		return r, err
	}
	check := func(label string, owner solana.PublicKey, account string) error {
		onChain, err := s.chain.TokenBalance(ctx, owner, s.mint)
		if err != nil {
			return ChainUnavailable(err)
		}
		ledger, err := BalanceOf(ctx, s.db, account)
		if err != nil {
			return err
		}
		r.Addresses = append(r.Addresses, checkAddress(label, owner.String(), int64(onChain), -ledger))
		return nil
	}
	if err := check("vault (deposits and payouts)", s.DepositAddress(), Vault); err != nil {
		return r, err
	}
	// Every game escrow the ledger knows of that still holds money, or ever
	// held some (a swept escrow must be empty on chain too).
	var escrows []string
	if err := s.db.NewSelect().Table("ledger_accounts").Column("id").Where("id LIKE 'chain:escrow:%'").
		Order("id").Scan(ctx, &escrows); err != nil {
		return r, fmt.Errorf("list the escrow accounts: %w", err)
	}
	for _, account := range escrows {
		gameID := strings.TrimPrefix(account, "chain:escrow:")
		if err := check("escrow of game "+gameID, s.keys.Escrow(gameID).PublicKey(), account); err != nil {
			return r, err
		}
	}
	r.Balanced = r.LedgerTotalMinor == 0 && r.EntriesTotalMinor == 0
	for _, a := range r.Addresses {
		r.Balanced = r.Balanced && a.ShortfallMinor == 0
	}
	return r, nil
}

// FaucetResult lists the faucet's transactions.
type FaucetResult struct {
	Address       string `json:"address"`
	AmountMinor   int64  `json:"amountMinor"`
	Lamports      int64  `json:"lamports"`
	USDCSignature string `json:"usdcSignature"`
	SOLSignature  string `json:"solSignature"`
}

// FaucetLamports is the SOL the faucet adds with every grant.
const FaucetLamports = 100_000_000

// MaxFaucet is the most USDC one faucet call grants (10,000 USDC).
const MaxFaucet = 10_000 * 1_000_000

// Faucet mints test USDC and SOL to an address. It exists only on the
// embedded chain; elsewhere it answers NOT_FOUND.
func (s *Service) Faucet(ctx context.Context, address solana.PublicKey, amount int64) (FaucetResult, error) {
	if amount < MinAmount || amount > MaxFaucet {
		return FaucetResult{}, invalidAmount("amountMinor", MaxFaucet)
	}
	usdc, err := s.faucet.MintTo(ctx, address, uint64(amount))
	if err != nil {
		return FaucetResult{}, fmt.Errorf("mint %d test USDC minor units to %s: %w", amount, address, err)
	}
	sol, err := s.faucet.Airdrop(ctx, address, FaucetLamports)
	if err != nil {
		return FaucetResult{}, fmt.Errorf("airdrop %d lamports to %s: %w", FaucetLamports, address, err)
	}
	return FaucetResult{Address: address.String(), AmountMinor: amount, Lamports: FaucetLamports,
		USDCSignature: usdc.String(), SOLSignature: sol.String()}, nil
}
