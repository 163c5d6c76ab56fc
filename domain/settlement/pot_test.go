package settlement

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/chain/localchain"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
)

// A game finished through the game service is settled once, in the
// transaction that finishes it: the game's result carries the settlement
// row's numbers and the winner is paid.
func TestFinishingAGameSettlesIt(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	const stake = 2_500_001
	g := p.start(t, stake)
	donor, sig := p.donate(t, g.ID, 123_457)
	pot, err := p.pot.PotOf(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(2*stake + 123_457)
	if want := potWith(2*stake, 123_457); pot != want || pot.TotalMinor != total {
		t.Errorf("pot before the end: got %+v, want %+v", pot, want)
	}
	treasury := p.balance(t, money.Treasury)

	if _, err := p.games.Act(ctx, g.Players[0], g.ID, game.Action{Type: "resign"}); err != nil {
		t.Fatal(err)
	}
	ended, err := p.games.Game(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	var stored game.Settlement
	var raw []byte
	if err := p.db.QueryRowContext(ctx, "SELECT result FROM settlements WHERE game_id = ?", g.ID).Scan(&raw); err != nil {
		t.Fatalf("the settlement row: %v", err)
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	want := game.Settlement{PotMinor: total, PlayerPotMinor: 2 * stake, SpectatorPotMinor: 123_457,
		FeeMinor: total / 100, PayoutMinor: total - total/100, EscrowAddress: p.pot.EscrowAddress(g.ID).String()}
	if !reflect.DeepEqual(stored, want) || ended.Result == nil || !reflect.DeepEqual(ended.Result.Settlement, want) {
		t.Errorf("settlement:\n stored %+v\n result %+v\n want   %+v", stored, ended.Result, want)
	}
	// funds+stake held, the stake locked, the pot less the fee won.
	if got, want := p.balance(t, money.Available(g.Players[1])), funds+total-total/100; got != want {
		t.Errorf("winner's available balance: got %d, want %d", got, want)
	}
	if got := p.balance(t, money.Treasury) - treasury; got != total/100 {
		t.Errorf("treasury: got +%d, want +%d", got, total/100)
	}
	p.wantLedgerAtZero(t)

	// The players' and the donor's wallet histories tell the story, newest
	// first, each line naming the game.
	for _, tc := range []struct {
		user string
		want []money.Activity
	}{
		{g.Players[1], []money.Activity{{Kind: "winnings", AmountMinor: total - total/100, GameID: g.ID},
			{Kind: "stake", AmountMinor: -stake, GameID: g.ID}}},
		{g.Players[0], []money.Activity{{Kind: "stake", AmountMinor: -stake, GameID: g.ID}}},
		{donor.ID, []money.Activity{{Kind: "donation", AmountMinor: -123_457, GameID: g.ID, Signature: sig}}},
	} {
		p.wantGameLines(t, tc.user, tc.want)
	}
}

// wantGameLines checks a user's wallet history, newest first, but for
// deposits (kind, amount, game, signature and the game's type).
func (p *platform) wantGameLines(t testing.TB, user string, want []money.Activity) {
	t.Helper()
	h, err := p.pot.money.History(context.Background(), user, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []money.Activity
	for _, a := range h {
		if a.Kind == money.KindDeposit {
			continue
		}
		if a.GameID != "" && a.GameType != "rps" {
			t.Errorf("history of %s: line %+v does not carry its game's type", user, a)
		}
		got = append(got, money.Activity{Kind: a.Kind, AmountMinor: a.AmountMinor, GameID: a.GameID, Signature: a.Signature})
	}
	if len(got) != len(want) {
		t.Errorf("history of %s: got %+v, want %+v", user, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("history of %s, line %d: got %+v, want %+v", user, i, got[i], want[i])
		}
	}
}

// A donation confirmed after its game ended is not in the pot: it is
// marked late and queued to go back to its donor.
func TestALateDonationIsRefunded(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	g := p.start(t, 1_000_000)
	if _, err := p.games.Act(ctx, g.Players[1], g.ID, game.Action{Type: "resign"}); err != nil {
		t.Fatal(err)
	}
	winner := p.balance(t, money.Available(g.Players[0]))

	donor, sig := p.donate(t, g.ID, 40_000)

	var late bool
	if err := p.db.NewSelect().Table("donations").Column("late").Where("signature = ?", sig).Scan(ctx, &late); err != nil {
		t.Fatal(err)
	}
	if !late {
		t.Error("the donation is not marked late")
	}
	pot, err := p.pot.PotOf(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pot.SpectatorPotMinor != 0 || pot.TotalMinor != 2_000_000 {
		t.Errorf("pot: got %+v, want no donations in it", pot)
	}
	want := []transfer{{Kind: KindRefund, To: donor.WalletAddress, Amount: 40_000, RefundOf: sig}}
	if got := p.transfers(t, g.ID); len(got) != 1 || got[0] != want[0] {
		t.Errorf("transfers: got %+v, want %+v", got, want)
	}
	ds, err := p.pot.Donations(ctx, g.ID, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || !ds[0].Refunded || ds[0].AmountMinor != 40_000 {
		t.Errorf("donations: got %+v, want the one donation, refunded", ds)
	}
	if got := p.balance(t, money.Available(g.Players[0])); got != winner {
		t.Errorf("winner's balance after a late donation: got %d, want %d", got, winner)
	}
	// The donation left the donor's wallet: their history shows it (its
	// refund joins it once the transfer is confirmed).
	p.wantGameLines(t, donor.ID, []money.Activity{{Kind: "donation", AmountMinor: -40_000, GameID: g.ID, Signature: sig}})
	p.wantLedgerAtZero(t)
}

// onChain is the platform on the embedded chain, whose escrows, vault and
// wallets hold real (local) USDC.
type onChain struct {
	*platform
	chain  *localchain.Chain
	client *chain.Client
}

func newOnChain(t testing.TB) *onChain {
	t.Helper()
	ctx := context.Background()
	p := newPlatform(t)
	// ProcessTransfers sends every transfer due by the clock; the other
	// tests queue theirs a year later, for escrows that hold nothing on
	// chain, so they are never due here.
	p.clock.advance(-365 * 24 * time.Hour)
	keys := p.pot.keys
	lc, err := localchain.New(ctx, p.db, time.Now, keys.LocalMint().PublicKey(), keys.LocalMintAuthority().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	client := chain.NewClient("http://embedded-chain", localchain.Transport{Chain: lc})
	if _, err := lc.Airdrop(ctx, keys.FeePayer().PublicKey(), 10_000_000_000); err != nil {
		t.Fatal(err)
	}
	p.pot.money = money.New(p.db, client, keys, lc.Mint, p.clock.now, p.pot.log, money.Confirmers{}, money.Deps{Faucet: lc})
	return &onChain{platform: p, chain: lc, client: client}
}

func (c *onChain) usdc(t testing.TB, owner solana.PublicKey) int64 {
	t.Helper()
	n, err := c.client.TokenBalance(context.Background(), owner, c.chain.Mint)
	if err != nil {
		t.Fatal(err)
	}
	return int64(n)
}

// donateOnChain lands a donation's USDC in the game's escrow and records
// it, as a confirmed donation transfer does.
func (c *onChain) donateOnChain(t testing.TB, gameID string, amount int64) (donor solana.PublicKey, signature string) {
	t.Helper()
	if _, err := c.chain.MintTo(context.Background(), c.pot.EscrowAddress(gameID), uint64(amount)); err != nil {
		t.Fatal(err)
	}
	u, sig := c.donate(t, gameID, amount)
	return solana.MustPublicKeyFromBase58(u.WalletAddress), sig
}

// The settlement's transfers move on chain what the books moved: after a
// win the donations are swept from the escrow to the vault; after a draw
// each goes back to its donor's wallet, never to their platform balance: a
// refund to a wallet with no USDC account waits until it has one again.
// Each is recorded once.
func TestSettlementTransfersOnChain(t *testing.T) {
	for _, tc := range []struct {
		name string
		win  bool
	}{
		{"a win sweeps the donations to the vault", true},
		{"a draw refunds each donation", false},
	} {
		t.Run(tc.name, func(t *testing.T) { settlementTransfersOnChain(t, tc.win) })
	}
}

// donatedGame is a staked game with two donations on chain: one from a
// wallet that keeps a USDC account, one from a wallet that has none.
type donatedGame struct {
	g                           game.Game
	withAccount, withoutAccount solana.PublicKey
	sigA, sigB                  string // their donations' signatures
	escrow, vault               solana.PublicKey
	vaultBefore                 int64
}

func settlementTransfersOnChain(t *testing.T, win bool) {
	ctx := context.Background()
	c := newOnChain(t)
	d := donatedGame{g: c.start(t, 1_000_000)}
	g := d.g
	d.withAccount, d.sigA = c.donateOnChain(t, g.ID, 70_000)
	d.withoutAccount, d.sigB = c.donateOnChain(t, g.ID, 30_000)
	// One donor's wallet keeps a USDC account; the other's has none.
	if _, err := c.chain.MintTo(ctx, d.withAccount, 1); err != nil {
		t.Fatal(err)
	}
	d.escrow, d.vault = c.pot.EscrowAddress(g.ID), c.pot.money.DepositAddress()
	d.vaultBefore = c.usdc(t, d.vault)
	if got := c.usdc(t, d.escrow); got != 100_000 {
		t.Fatalf("escrow on chain: got %d, want 100000", got)
	}

	n := c.endAndTransfer(t, d, win)
	wantTransfers := 2
	if win {
		wantTransfers = 1
	}
	if n != wantTransfers {
		t.Errorf("transfers confirmed: got %d, want %d", n, wantTransfers)
	}

	if got := c.usdc(t, d.escrow); got != 0 {
		t.Errorf("escrow on chain after the transfers: got %d, want 0", got)
	}
	if got := c.balance(t, money.Escrow(g.ID)); got != 0 {
		t.Errorf("escrow in the ledger: got %d, want 0", got)
	}
	if got := c.balance(t, money.SpectatorPot(g.ID)); got != 0 {
		t.Errorf("spectator pot: got %d, want 0", got)
	}
	ts, err := c.pot.Transfers(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	c.wantTransfersLanded(t, d, ts, win)
	c.wantLedgerAtZero(t)
	c.wantDonationHistories(t, d, ts, win)

	// Nothing is left to send, and nothing is recorded twice.
	postings := c.ledgerTransactions(t)
	if n, err := c.pot.ProcessTransfers(ctx); err != nil || n != 0 {
		t.Errorf("a second run: got %d, %v; want 0", n, err)
	}
	if got := c.ledgerTransactions(t); got != postings {
		t.Errorf("a second run posted %d ledger transactions", got-postings)
	}
	r, err := c.pot.money.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Addresses {
		if a.Address == d.escrow.String() && (a.DifferenceMinor == nil || *a.DifferenceMinor != 0) {
			t.Errorf("reconciliation of the escrow: %+v", a)
		}
	}
}

// endAndTransfer ends the game, by a resignation (win) or a draw, and
// sends its transfers; after a draw the refund to the wallet without a
// USDC account waits until it has one again. It returns how many
// transfers were confirmed.
func (c *onChain) endAndTransfer(t *testing.T, d donatedGame, win bool) int {
	t.Helper()
	ctx := context.Background()
	if win {
		if _, err := c.games.Act(ctx, d.g.Players[1], d.g.ID, game.Action{Type: "resign"}); err != nil {
			t.Fatal(err)
		}
	} else {
		c.settle(t, d.g, drawOutcome)
	}
	n, err := c.pot.ProcessTransfers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !win {
		c.wantRefundWaiting(t, d.g.ID, d.sigB, 30_000)
		// The donor's wallet has a USDC account again: the refund,
		// retried, goes there.
		if _, err := c.chain.MintTo(ctx, d.withoutAccount, 1); err != nil {
			t.Fatal(err)
		}
		c.clock.advance(refundWait)
		more, err := c.pot.ProcessTransfers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += more
	}
	return n
}

// wantTransfersLanded checks that every transfer is confirmed with a
// signature, and where the money went on chain: the vault after a win,
// each donor's wallet after a draw.
func (c *onChain) wantTransfersLanded(t *testing.T, d donatedGame, ts []Transfer, win bool) {
	t.Helper()
	kinds := map[string]string{}
	for _, x := range ts {
		if x.Status != "confirmed" || x.Signature == nil {
			t.Errorf("transfer %s (%s): status %s, want confirmed with a signature", x.ID, x.Kind, x.Status)
		}
		if x.RefundOf != nil {
			kinds[*x.RefundOf] = x.Kind
		}
	}
	if win {
		if got := c.usdc(t, d.vault) - d.vaultBefore; got != 100_000 {
			t.Errorf("vault on chain: got +%d, want +100000 (the donations)", got)
		}
		return
	}
	if kinds[d.sigA] != KindRefund || kinds[d.sigB] != KindRefund {
		t.Errorf("refund kinds: got %v, want %s for both", kinds, KindRefund)
	}
	if got := c.usdc(t, d.withAccount); got != 1+70_000 {
		t.Errorf("refunded wallet on chain: got %d, want 70001", got)
	}
	if got := c.usdc(t, d.withoutAccount); got != 1+30_000 {
		t.Errorf("wallet that had no USDC account on chain: got %d, want 30001", got)
	}
	if got := c.balance(t, money.Available(c.donorOf(t, d.sigB))); got != 0 {
		t.Errorf("platform balance of the donor who had no USDC account: got %d, want 0", got)
	}
	if got := c.usdc(t, d.vault) - d.vaultBefore; got != 0 {
		t.Errorf("vault on chain: got +%d, want +0 (every refund went to its wallet)", got)
	}
}

// wantDonationHistories checks that each donor's history shows the
// donation and, after a draw, its refund with the refund's own signature;
// and that each player's shows the stake and, after a draw, the stake
// coming back.
func (c *onChain) wantDonationHistories(t *testing.T, d donatedGame, ts []Transfer, win bool) {
	t.Helper()
	g := d.g
	refundSig := map[string]string{}
	for _, x := range ts {
		if x.RefundOf != nil && x.Signature != nil {
			refundSig[*x.RefundOf] = *x.Signature
		}
	}
	for _, don := range []struct {
		sig    string
		amount int64
	}{{d.sigA, 70_000}, {d.sigB, 30_000}} {
		want := []money.Activity{{Kind: "donation", AmountMinor: -don.amount, GameID: g.ID, Signature: don.sig}}
		if !win {
			want = append([]money.Activity{{Kind: "donation refund", AmountMinor: don.amount, GameID: g.ID,
				Signature: refundSig[don.sig]}}, want...)
		}
		c.wantGameLines(t, c.donorOf(t, don.sig), want)
	}
	if !win {
		for _, pl := range g.Players {
			c.wantGameLines(t, pl, []money.Activity{{Kind: "stake refund", AmountMinor: 1_000_000, GameID: g.ID},
				{Kind: "stake", AmountMinor: -1_000_000, GameID: g.ID}})
		}
	}
}

var drawOutcome = rules.Outcome{Done: true, Reason: "board-full"}

// donorOf is the id of the donor of the donation with signature sig.
func (c *onChain) donorOf(t testing.TB, sig string) string {
	t.Helper()
	var donor string
	if err := c.db.NewSelect().Table("donations").Column("donor_id").Where("signature = ?", sig).Scan(context.Background(), &donor); err != nil {
		t.Fatal(err)
	}
	return donor
}

// wantRefundWaiting checks that the refund of the donation with signature
// sig waits for its wallet's USDC account: pending, unsigned, with the
// reason; the donation still in the escrow and the spectator pot, and
// nothing on the donor's platform balance.
func (c *onChain) wantRefundWaiting(t testing.TB, gameID, sig string, amount int64) {
	t.Helper()
	if got := c.balance(t, money.Available(c.donorOf(t, sig))); got != 0 {
		t.Errorf("platform balance of the donor whose wallet has no USDC account: got %d, want 0", got)
	}
	ts, err := c.pot.Transfers(context.Background(), gameID)
	if err != nil {
		t.Fatal(err)
	}
	waiting := 0
	for _, x := range ts {
		if x.RefundOf != nil && *x.RefundOf == sig {
			waiting++
			if x.Kind != KindRefund || x.Status != "pending" || x.Signature != nil || !strings.Contains(x.Error, "no USDC token account") {
				t.Errorf("refund to a wallet with no USDC account: %+v, want it pending, unsigned, saying why", x)
			}
		}
	}
	if waiting != 1 {
		t.Errorf("refunds of %s: %d, want 1", sig, waiting)
	}
	if got := c.balance(t, money.SpectatorPot(gameID)); got != amount {
		t.Errorf("spectator pot while the refund waits: got %d, want %d", got, amount)
	}
	if got, ledger := c.usdc(t, c.pot.EscrowAddress(gameID)), c.balance(t, money.Escrow(gameID)); got != amount || ledger != -amount {
		t.Errorf("escrow while the refund waits: %d on chain, %d in the ledger; want %d and -%d", got, ledger, amount, amount)
	}
	c.wantLedgerAtZero(t)
}

func TestDonationLimits(t *testing.T) {
	ctx := context.Background()
	c := newOnChain(t)
	g := c.start(t, 0)
	spectator := c.newUser(t, 0)
	if _, err := c.chain.MintTo(ctx, solana.MustPublicKeyFromBase58(spectator.WalletAddress), 50*MinDonation); err != nil {
		t.Fatal(err)
	}
	player, err := c.games.Game(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	playerUser := spectator
	playerUser.ID = player.Players[0]
	for _, tc := range []struct {
		name   string
		amount int64
		code   string
	}{
		{"below the minimum", MinDonation - 1, domain.CodeValidation},
		{"above the maximum", MaxDonation + 1, domain.CodeValidation},
		{"more than the wallet holds", 51 * MinDonation, domain.CodeInsufficientFunds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.pot.PrepareDonation(ctx, spectator, g.ID, tc.amount)
			if got := domain.ErrorCode(err); got != tc.code {
				t.Errorf("PrepareDonation(%d): got %v, want %s", tc.amount, err, tc.code)
			}
		})
	}
	if _, err := c.pot.PrepareDonation(ctx, playerUser, g.ID, MinDonation); domain.ErrorCode(err) != domain.CodeForbidden {
		t.Errorf("a player donating to their own game: got %v, want FORBIDDEN", err)
	}
	prepared, err := c.pot.PrepareDonation(ctx, spectator, g.ID, MinDonation)
	if err != nil {
		t.Fatalf("the minimum donation: %v", err)
	}
	if prepared.Destination != c.pot.EscrowAddress(g.ID).String() || prepared.AmountMinor != MinDonation {
		t.Errorf("prepared donation: got %+v, want %d into the escrow %s", prepared, MinDonation, c.pot.EscrowAddress(g.ID))
	}
	if _, err := c.games.Act(ctx, g.Players[0], g.ID, game.Action{Type: "resign"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.pot.PrepareDonation(ctx, spectator, g.ID, MinDonation); domain.ErrorCode(err) != domain.CodeGameNotActive {
		t.Errorf("donating to a finished game: got %v, want GAME_NOT_ACTIVE", err)
	}
}

// The live list shows each game's pot as its documentation says: the
// player pot plus the donations, as the game's own pot does.
func TestLiveListShowsThePotWithDonations(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	g := p.start(t, 2_000_000)
	p.donate(t, g.ID, 300_000)
	pot, err := p.pot.PotOf(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	live, err := p.games.Live(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range live {
		if l.GameID == g.ID {
			if l.PotMinor != pot.TotalMinor {
				t.Errorf("live list pot: got %d, want %d (stakes %d plus donations %d)", l.PotMinor, pot.TotalMinor,
					pot.PlayerPotMinor, pot.SpectatorPotMinor)
			}
			return
		}
	}
	t.Fatalf("game %s missing from the live list", g.ID)
}
