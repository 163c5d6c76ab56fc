package money

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/gagliardetto/solana-go"

	"wager.example.com/sdk/sumtree"
	"wager/chain"
)

// AddressCheck compares one platform-controlled address's USDC on chain
// with what the ledger says it should hold.
type AddressCheck struct {
	Label           string `json:"label"`
	Address         string `json:"address"`
	ChainMinor      *int64 `json:"chainMinor" doc:"USDC the address holds on chain; null when the Solana network did not answer in time: the address is unread (listed in unreadAddresses)"`
	LedgerMinor     int64  `json:"ledgerMinor"`
	DifferenceMinor *int64 `json:"differenceMinor" doc:"chain minus ledger; 0 when they agree, null when the address is unread"`
	// Anyone can send USDC to a platform address: more on chain than in
	// the ledger is money nobody is owed, less is money missing.
	UnattributedMinor int64 `json:"unattributedMinor" minimum:"0" doc:"USDC on chain beyond the ledger (arrived without a matching intent; nobody's balance); 0 otherwise, and when unread. It does not unbalance the books"`
	ShortfallMinor    int64 `json:"shortfallMinor" minimum:"0" doc:"USDC the ledger says the address holds and the chain does not; 0 otherwise, and when unread. Any shortfall unbalances the books"`
}

// Reconciliation is the state of the books.
type Reconciliation struct {
	LedgerTotalMinor  int64          `json:"ledgerTotalMinor" doc:"sum of all account balances; must be 0"`
	EntriesTotalMinor int64          `json:"entriesTotalMinor" doc:"sum of all entries; must be 0"`
	Addresses         []AddressCheck `json:"addresses"`
	UnreadAddresses   []string       `json:"unreadAddresses" doc:"the addresses whose chain balance the Solana network did not give in time (their chainMinor is null); [] when every address was read"`
	Balanced          bool           `json:"balanced" doc:"true when both totals are 0, every address was read and none holds less on chain than in the ledger (unattributed USDC does not count against it); false while unreadAddresses is not empty"`
}

// checkAddress compares an address's chain balance (nil: not read) with
// its ledger balance (what the ledger says it holds).
func checkAddress(label, address string, chainMinor *int64, ledgerMinor int64) AddressCheck {
	c := AddressCheck{Label: label, Address: address, ChainMinor: chainMinor, LedgerMinor: ledgerMinor}
	if chainMinor == nil {
		return c
	}
	d := *chainMinor - ledgerMinor
	c.DifferenceMinor = &d
	if d > 0 {
		c.UnattributedMinor = d
	} else {
		c.ShortfallMinor = -d
	}
	return c
}

// platformAccount is a platform address and its ledger account.
type platformAccount struct {
	label   string
	owner   solana.PublicKey
	account string
}

// Reconcile reports the ledger's totals and, for every platform-controlled
// address, its chain balance against its ledger balance. The chain reads
// share one wait of ChainReadWait: an address not read by then is listed
// as unread and the books are not balanced. It returns the database's
// errors only.
func (s *Service) Reconcile(ctx context.Context) (Reconciliation, error) {
	r := Reconciliation{UnreadAddresses: []string{}}
	var err error
	if r.LedgerTotalMinor, r.EntriesTotalMinor, err = Totals(ctx, s.db); err != nil {
		return r, err
	}
	accounts := []platformAccount{{"vault (deposits and payouts)", s.DepositAddress(), Vault}}
	// Every game escrow the ledger knows of that still holds money, or ever
	// held some (a swept escrow must be empty on chain too).
	var escrows []string
	if err := s.db.NewSelect().Table("ledger_accounts").Column("id").Where("id LIKE 'chain:escrow:%'").
		Order("id").Scan(ctx, &escrows); err != nil {
		return r, fmt.Errorf("list the escrow accounts: %w", err)
	}
	for _, account := range escrows {
		gameID := strings.TrimPrefix(account, "chain:escrow:")
		accounts = append(accounts, platformAccount{"escrow of game " + gameID, s.keys.Escrow(gameID).PublicKey(), account})
	}
	owners := make([]solana.PublicKey, len(accounts))
	for i, a := range accounts {
		owners[i] = a.owner
	}
	onChain := s.tokenBalances(ctx, owners)
	for i, a := range accounts {
		ledger, err := BalanceOf(ctx, s.db, a.account)
		if err != nil {
			return r, err
		}
		r.Addresses = append(r.Addresses, checkAddress(a.label, a.owner.String(), onChain[i], -ledger))
		if onChain[i] == nil {
			r.UnreadAddresses = append(r.UnreadAddresses, a.owner.String())
		}
	}
	r.Balanced = r.LedgerTotalMinor == 0 && r.EntriesTotalMinor == 0 && len(r.UnreadAddresses) == 0
	for _, a := range r.Addresses {
		r.Balanced = r.Balanced && a.ShortfallMinor == 0
	}
	return r, nil
}

// Holdings reads the USDC of the platform's token accounts that hold
// money (the vault, and every escrow the ledger says holds some) at the
// credit commitment, and the chain's slot when the reads began. An
// address the chain did not give within ChainReadWait is an error: assets
// read in part would be understated.
func (s *Service) Holdings(ctx context.Context) (uint64, []sumtree.Asset, error) {
	slot, err := s.chain.Slot(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("read the platform's holdings: %w", err)
	}
	var escrows []string
	if err := s.db.NewSelect().Table("ledger_accounts").Column("id").Where("id LIKE 'chain:escrow:%' AND balance <> 0").
		Order("id").Scan(ctx, &escrows); err != nil {
		return 0, nil, fmt.Errorf("list the escrows that hold money: %w", err)
	}
	owners := []solana.PublicKey{s.DepositAddress()}
	for _, account := range escrows {
		owners = append(owners, s.keys.Escrow(strings.TrimPrefix(account, "chain:escrow:")).PublicKey())
	}
	out := make([]sumtree.Asset, len(owners))
	for i, n := range s.tokenBalances(ctx, owners) {
		if n == nil {
			return 0, nil, fmt.Errorf("read the platform's holdings: the chain did not give the USDC of %s in time", owners[i])
		}
		out[i] = sumtree.Asset{Address: chain.ATA(owners[i], s.mint).String(), BalanceMinor: *n}
	}
	return slot, out, nil
}

// chainReaders is how many chain reads tokenBalances runs at a time: the
// escrows of every game ever staked must fit in one ChainReadWait.
const chainReaders = 8

// tokenBalances reads the USDC of each owner on chain at the credit
// commitment (the books' view), all within ChainReadWait; an owner not
// read by then has nil.
func (s *Service) tokenBalances(ctx context.Context, owners []solana.PublicKey) []*int64 {
	ctx, cancel := context.WithTimeout(ctx, ChainReadWait)
	defer cancel()
	out := make([]*int64, len(owners))
	errs := make([]error, len(owners))
	slots := make(chan struct{}, chainReaders)
	var wg sync.WaitGroup
	for i, owner := range owners {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			n, err := s.chain.CreditedTokenBalance(ctx, owner, s.mint)
			if err != nil {
				errs[i] = err
				return
			}
			v := int64(n)
			out[i] = &v
		})
	}
	wg.Wait()
	unread, first := 0, error(nil)
	for _, err := range errs {
		if err != nil {
			unread, first = unread+1, cmp.Or(first, err)
		}
	}
	if unread > 0 {
		s.log.Warn("reconcile: the chain did not answer; addresses left unread", "unread", unread, "of", len(owners), "err", first)
	}
	return out
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
