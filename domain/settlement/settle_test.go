package settlement

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/chat"
	"wager/domain/eventlog"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/users"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func sum(entries []money.Entry) int64 {
	var s int64
	for _, e := range entries {
		s += e.Amount
	}
	return s
}

func TestSettlementEntries(t *testing.T) {
	const gameID, a, b = "g", "a", "b"
	players := []string{a, b}
	for _, tc := range []struct {
		name      string
		stake     int64
		donations int64
		winner    string
		want      []money.Entry
	}{
		{"a win with donations", 1_000_000, 550_000, a, []money.Entry{
			{Account: money.Locked(a), Amount: -1_000_000}, {Account: money.Locked(b), Amount: -1_000_000}, {Account: money.SpectatorPot(gameID), Amount: -550_000},
			{Account: money.Available(a), Amount: 2_524_500}, {Account: money.Treasury, Amount: 25_500}}},
		{"a win without donations", 1_234_567, 0, b, []money.Entry{
			{Account: money.Locked(a), Amount: -1_234_567}, {Account: money.Locked(b), Amount: -1_234_567},
			{Account: money.Available(b), Amount: 2_444_443}, {Account: money.Treasury, Amount: 24_691}}},
		{"a win of a pot under 100 units: no fee", 49, 0, a, []money.Entry{
			{Account: money.Locked(a), Amount: -49}, {Account: money.Locked(b), Amount: -49}, {Account: money.Available(a), Amount: 98}}},
		{"a win of exactly 100 units", 50, 0, b, []money.Entry{
			{Account: money.Locked(a), Amount: -50}, {Account: money.Locked(b), Amount: -50}, {Account: money.Available(b), Amount: 99}, {Account: money.Treasury, Amount: 1}}},
		{"a free game won with donations", 0, 10_000, a, []money.Entry{
			{Account: money.SpectatorPot(gameID), Amount: -10_000}, {Account: money.Available(a), Amount: 9_900}, {Account: money.Treasury, Amount: 100}}},
		{"a free game won without donations", 0, 0, a, nil},
		{"a draw: stakes back, donations refunded on chain", 2_000_000, 700_000, "", []money.Entry{
			{Account: money.Locked(a), Amount: -2_000_000}, {Account: money.Available(a), Amount: 2_000_000},
			{Account: money.Locked(b), Amount: -2_000_000}, {Account: money.Available(b), Amount: 2_000_000}}},
		{"a free game drawn", 0, 700_000, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := settlementEntries(gameID, tc.stake, players, tc.winner, potWith(2*tc.stake, tc.donations))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries:\n got  %v\n want %v", got, tc.want)
			}
			if s := sum(got); s != 0 {
				t.Errorf("entries sum to %d, want 0", s)
			}
		})
	}
}

func TestPotWith(t *testing.T) {
	for _, tc := range []struct {
		players, donated       int64
		total, fee, winnerGets int64
	}{
		{0, 0, 0, 0, 0},
		{99, 0, 99, 0, 99},
		{100, 0, 100, 1, 99},
		{2_000_000, 0, 2_000_000, 20_000, 1_980_000},
		{2_000_000, 10_001, 2_010_001, 20_100, 1_989_901},
		{0, 199, 199, 1, 198},
		{2 * game.MaxStake, 0, 2 * game.MaxStake, 2 * game.MaxStake / 100, 2 * game.MaxStake * 99 / 100},
	} {
		got := potWith(tc.players, tc.donated)
		want := Pot{PlayerPotMinor: tc.players, SpectatorPotMinor: tc.donated, TotalMinor: tc.total, FeeBps: 100,
			FeeMinor: tc.fee, WinnerGetsMinor: tc.winnerGets}
		if got != want {
			t.Errorf("potWith(%d, %d):\n got  %+v\n want %+v", tc.players, tc.donated, got, want)
		}
	}
}

// clock is a settable clock for the services under test.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

type noSink struct{}

func (noSink) Published(eventlog.Published) {}

type noCrowd struct{}

func (noCrowd) Spectators(string) int { return 0 }
func (noCrowd) TotalSpectators() int  { return 0 }

// LatestSeq says a newer event is always there: knowing nothing of what
// happened, every read goes to the database.
func (noCrowd) LatestSeq(string) (int, bool) { return math.MaxInt, true }

// platform is the pot with the game service it settles for, wired as the
// server wires them.
type platform struct {
	db    *bun.DB
	clock *clock
	games *game.Service
	pot   *Service
}

// payOut pays out every game's end with the settlement alone, holding
// nothing for review.
type payOut struct{ p *platform }

func (s payOut) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	pay := s.p.pot.StartSettle(e.Tx, e.Game, e.Game.Players, e.Outcome, e.Reads)
	return func(ctx context.Context, e *game.Ending) error {
		out, err := pay(ctx, "")
		e.Paid(out)
		return err
	}, nil
}

func newPlatform(t testing.TB) *platform {
	t.Helper()
	return newPlatformWith(t, nil)
}

// newPlatformWith is newPlatform whose settlement has the collaborators
// deps returns for the platform's database and clock (nil: none).
func newPlatformWith(t testing.TB, deps func(bdb *bun.DB, now domain.Clock) Deps) *platform {
	t.Helper()
	bdb := dbtest.DB(t)
	c := &clock{}
	c.ns.Store(time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	log := slog.New(slog.DiscardHandler)
	rooms := eventlog.New(bdb, noSink{})
	keys := chain.NewKeys(make([]byte, 32))
	m := money.New(bdb, nil, keys, solana.PublicKey{}, c.now, log, money.Confirmers{}, money.Deps{})
	p := &platform{db: bdb, clock: c}
	p.games = game.New(bdb, c.now, log, game.Deps{Events: rooms, Notify: notify.New(bdb, rooms, c.now), Settle: payOut{p}, Live: noCrowd{},
		EscrowOf: func(gameID string) string { return keys.Escrow(gameID).PublicKey().String() }})
	var d Deps
	if deps != nil {
		d = deps(bdb, c.now)
	}
	p.pot = New(bdb, rooms, p.games, m, chat.New(bdb, rooms, c.now), keys, anyBettor{}, c.now, log, d)
	return p
}

const funds = 1_000 * 1_000_000

// newUser stores a user holding amount on their available balance.
func (p *platform) newUser(t testing.TB, amount int64) users.User {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	u := users.User{WalletAddress: solana.NewWallet().PublicKey().String(), Username: "u_" + hex.EncodeToString(b),
		CreatedAt: p.clock.now(), UpdatedAt: p.clock.now()}
	if _, err := p.db.NewInsert().Model(&u).Returning("id").Exec(context.Background()); err != nil {
		t.Fatalf("create a user: %v", err)
	}
	if amount > 0 {
		p.post(t, money.Posting{Kind: money.KindDeposit, Reference: "deposit:" + uuid.NewString(),
			Entries: []money.Entry{{Account: money.Available(u.ID), Amount: amount}, {Account: money.Vault, Amount: -amount}}})
	}
	return u
}

func (p *platform) post(t testing.TB, posting money.Posting) {
	t.Helper()
	err := db.Transact(context.Background(), p.db, func(ctx context.Context, tx db.Tx) error {
		_, err := money.Post(ctx, tx, nil, posting)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// start matches two new players, each holding funds beside the stake, into
// an rps game for stake and returns it with its players in seat order.
func (p *platform) start(t testing.TB, stake int64) game.Game {
	t.Helper()
	ctx := context.Background()
	creator := p.newUser(t, 0)
	l, err := p.games.CreateLobby(ctx, creator.ID, "rps", stake, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []users.User{p.newUser(t, funds+stake), p.newUser(t, funds+stake)} {
		if _, err := p.games.JoinQueue(ctx, u.ID, l.ID); err != nil {
			t.Fatal(err)
		}
	}
	var gameID string
	if err := p.db.NewSelect().Table("games").Column("id").Where("lobby_id = ?", l.ID).Scan(ctx, &gameID); err != nil {
		t.Fatalf("the lobby's game: %v", err)
	}
	g, err := p.games.Game(ctx, gameID)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// donate records a confirmed donation by a new spectator, as the
// confirmation of its transfer into the escrow does.
func (p *platform) donate(t testing.TB, gameID string, amount int64) (donor users.User, signature string) {
	t.Helper()
	donor = p.newUser(t, 0)
	var sig solana.Signature
	rand.Read(sig[:])
	signature = sig.String()
	in := money.Intent{ID: uuid.NewString(), Kind: KindDonation, UserID: donor.ID, AmountMinor: amount, Reference: gameID,
		Signature: &signature, Status: "submitted"}
	if err := db.Transact(context.Background(), p.db, func(ctx context.Context, tx db.Tx) error {
		return p.pot.ConfirmDonation(ctx, tx, in)
	}); err != nil {
		t.Fatalf("donate %d: %v", amount, err)
	}
	return donor, signature
}

// settle runs the pot's settlement of g with outcome o.
func (p *platform) settle(t testing.TB, g game.Game, o rules.Outcome) game.Settlement {
	t.Helper()
	var out game.Settlement
	if err := db.Transact(context.Background(), p.db, func(ctx context.Context, tx db.Tx) error {
		var reads db.Reads
		pay := p.pot.StartSettle(tx, g, g.Players, o, &reads)
		if err := reads.Run(ctx, tx); err != nil {
			return err
		}
		var err error
		out, err = pay(ctx, "")
		return err
	}); err != nil {
		t.Fatalf("settle game %s: %v", g.ID, err)
	}
	return out
}

func (p *platform) balance(t testing.TB, account string) int64 {
	t.Helper()
	b, err := money.BalanceOf(context.Background(), p.db, account)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// books is every balance a settlement may move.
type books struct {
	Available, Locked [2]int64
	SpectatorPot      int64
	Escrow            int64
	Treasury          int64
}

func (p *platform) books(t testing.TB, g game.Game) books {
	t.Helper()
	var b books
	for i, u := range g.Players {
		b.Available[i], b.Locked[i] = p.balance(t, money.Available(u)), p.balance(t, money.Locked(u))
	}
	b.SpectatorPot, b.Escrow = p.balance(t, money.SpectatorPot(g.ID)), p.balance(t, money.Escrow(g.ID))
	b.Treasury = p.balance(t, money.Treasury)
	return b
}

func (p *platform) wantLedgerAtZero(t testing.TB) {
	t.Helper()
	balances, entries, err := money.Totals(context.Background(), p.db)
	if err != nil {
		t.Fatal(err)
	}
	if balances != 0 || entries != 0 {
		t.Errorf("ledger totals: got balances %d, entries %d; want 0 and 0", balances, entries)
	}
}

// transfer is a queued settlement transfer as the tests compare them.
type transfer struct {
	Kind     string
	To       string
	Amount   int64
	RefundOf string
}

func (p *platform) transfers(t testing.TB, gameID string) []transfer {
	t.Helper()
	ts, err := p.pot.Transfers(context.Background(), gameID)
	if err != nil {
		t.Fatal(err)
	}
	out := []transfer{}
	for _, x := range ts {
		tr := transfer{Kind: x.Kind, To: x.ToAddress, Amount: x.AmountMinor}
		if x.RefundOf != nil {
			tr.RefundOf = *x.RefundOf
		}
		if x.Status != "pending" {
			t.Errorf("transfer %s: status %s, want pending (nothing sends them here)", x.ID, x.Status)
		}
		out = append(out, tr)
	}
	slices.SortFunc(out, func(a, b transfer) int { return strings.Compare(a.RefundOf, b.RefundOf) })
	return out
}

func (p *platform) ledgerTransactions(t testing.TB) int {
	t.Helper()
	var n int
	if err := p.db.QueryRowContext(context.Background(), "SELECT count(*) FROM ledger_transactions").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// settlementCase is one finished game: its stake, its donations and how it
// ended.
type settlementCase struct {
	stake     int64
	donations []int64
	winner    int    // seat of the winner, -1 for none
	reason    string // how it ended
}

// check starts the case's game, adds its donations, settles it and
// verifies the arithmetic and the bookkeeping, then that settling again
// changes nothing.
func (p *platform) check(t testing.TB, tc settlementCase) {
	t.Helper()
	g := p.start(t, tc.stake)
	type donation struct {
		wallet, signature string
		amount            int64
	}
	var donations []donation
	var donated int64
	for _, amount := range tc.donations {
		donor, sig := p.donate(t, g.ID, amount)
		donations = append(donations, donation{donor.WalletAddress, sig, amount})
		donated += amount
	}
	before := p.books(t, g)
	o := rules.Outcome{Done: true, Reason: tc.reason}
	if tc.winner >= 0 {
		o.Winner = g.Players[tc.winner]
	}

	got := p.settle(t, g, o)

	total := 2*tc.stake + donated
	want := game.Settlement{PotMinor: total, PlayerPotMinor: 2 * tc.stake, SpectatorPotMinor: donated,
		EscrowAddress: p.pot.EscrowAddress(g.ID).String()}
	if tc.winner >= 0 && total > 0 {
		want.FeeMinor = total / 100
		want.PayoutMinor = total - total/100
	}
	queued := got.Queued
	got.Queued = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v: settlement:\n got  %+v\n want %+v", tc, got, want)
	}

	after := p.books(t, g)
	wantBooks := before
	wantBooks.Locked = [2]int64{0, 0}
	var wantTransfers []transfer
	if tc.winner >= 0 {
		wantBooks.Available[tc.winner] += total - total/100
		wantBooks.Treasury += total / 100
		wantBooks.SpectatorPot = 0
		if donated > 0 {
			wantTransfers = append(wantTransfers, transfer{Kind: KindSweep, To: p.pot.money.DepositAddress().String(), Amount: donated})
		}
	} else {
		wantBooks.Available[0] += tc.stake
		wantBooks.Available[1] += tc.stake
		for _, d := range donations {
			wantTransfers = append(wantTransfers, transfer{Kind: KindRefund, To: d.wallet, Amount: d.amount, RefundOf: d.signature})
		}
		slices.SortFunc(wantTransfers, func(a, b transfer) int { return strings.Compare(a.RefundOf, b.RefundOf) })
	}
	if wantTransfers == nil {
		wantTransfers = []transfer{}
	}
	if after != wantBooks {
		t.Errorf("%+v: books after settlement:\n got  %+v\n want %+v", tc, after, wantBooks)
	}
	if after.Escrow != -donated {
		t.Errorf("%+v: escrow: got %d, want %d (the chain side moves by its own transfers)", tc, after.Escrow, -donated)
	}
	transfers := p.transfers(t, g.ID)
	if !reflect.DeepEqual(transfers, wantTransfers) {
		t.Errorf("%+v: queued transfers:\n got  %+v\n want %+v", tc, transfers, wantTransfers)
	}
	// The settlement tells what it queued (game:completed carries it).
	told, stored := []transfer{}, []transfer{}
	for _, q := range queued {
		told = append(told, transfer{Kind: q.Kind, To: q.ToAddress, Amount: q.AmountMinor})
	}
	for _, tr := range transfers {
		stored = append(stored, transfer{Kind: tr.Kind, To: tr.To, Amount: tr.Amount})
	}
	byFields := func(a, b transfer) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.To, b.To), cmp.Compare(a.Amount, b.Amount))
	}
	slices.SortFunc(told, byFields)
	slices.SortFunc(stored, byFields)
	if !reflect.DeepEqual(told, stored) {
		t.Errorf("%+v: the settlement told of the transfers %+v, it queued %+v", tc, told, stored)
	}
	p.wantLedgerAtZero(t)

	// A second settlement answers the first and moves nothing.
	postings := p.ledgerTransactions(t)
	again := p.settle(t, g, o)
	if !reflect.DeepEqual(again, got) {
		t.Errorf("%+v: second settlement:\n got  %+v\n want %+v", tc, again, got)
	}
	if b := p.books(t, g); b != after {
		t.Errorf("%+v: books after a second settlement:\n got  %+v\n want %+v", tc, b, after)
	}
	if n := p.ledgerTransactions(t); n != postings {
		t.Errorf("%+v: a second settlement posted %d ledger transactions, want 0", tc, n-postings)
	}
	if tr := p.transfers(t, g.ID); !reflect.DeepEqual(tr, transfers) {
		t.Errorf("%+v: transfers after a second settlement: got %+v, want %+v", tc, tr, transfers)
	}
}

func TestSettle(t *testing.T) {
	p := newPlatform(t)
	for _, tc := range []struct {
		name string
		settlementCase
	}{
		{"a win", settlementCase{stake: 5_000_000, winner: 0, reason: "score"}},
		{"a win with donations", settlementCase{stake: 5_000_000, donations: []int64{10_000, 2_345_678}, winner: 1, reason: "resign"}},
		{"a win whose fee rounds down", settlementCase{stake: 1_234_567, donations: []int64{99}, winner: 0, reason: "timeout"}},
		{"a win of a pot under 100 units", settlementCase{stake: 40, donations: []int64{19}, winner: 1, reason: "score"}},
		{"a free game won with donations", settlementCase{stake: 0, donations: []int64{500_000}, winner: 0, reason: "score"}},
		{"a free game won without donations", settlementCase{stake: 0, winner: 1, reason: "score"}},
		{"a draw", settlementCase{stake: 3_000_000, winner: -1, reason: "board-full"}},
		{"a draw with donations", settlementCase{stake: 3_000_000, donations: []int64{10_000, 20_000, 30_000}, winner: -1, reason: "board-full"}},
		{"a cancellation with donations", settlementCase{stake: 7_000_001, donations: []int64{1_000_000}, winner: -1, reason: "abandoned"}},
		{"a free game cancelled", settlementCase{stake: 0, winner: -1, reason: "abandoned"}},
		{"the largest stakes", settlementCase{stake: game.MaxStake, donations: []int64{MaxDonation}, winner: 0, reason: "score"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.check(t, tc.settlementCase)
		})
	}
}

// anyBettor lets everyone bet without a cap: the settlement's arithmetic
// is tested here, the integrity rules in package integrity and the API's
// tests.
type anyBettor struct{}

func (anyBettor) CheckNotLinked(context.Context, bun.IDB, string, []string) error { return nil }
func (anyBettor) PoolCap(int64) int64                                             { return 1 << 62 }
