package game_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math"
	"slices"
	"sync"
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
	"wager/domain/integrity"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/settlement"
	"wager/domain/users"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// clock is a settable clock for the services under test.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// epochs counts the clocks handed out. Each clock starts a day before the
// previous one: the tests share one database, and ExpireDue claims every
// active game whose deadline passed, so a test that moves its clock
// forward must never reach the deadlines of games earlier tests left
// running (those lie a day or more later).
var epochs atomic.Int64

func newClock() *clock {
	c := &clock{}
	start := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC).Add(-time.Duration(epochs.Add(1)) * 24 * time.Hour)
	c.ns.Store(start.UnixNano())
	return c
}

// recorder is the rooms' sink: it keeps what committed transactions
// published.
type recorder struct {
	mu  sync.Mutex
	got []eventlog.Published
}

func (r *recorder) Published(p eventlog.Published) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
}

// notices returns the notices of type kind sent to userID, oldest first.
func (r *recorder) notices(userID string, kind domain.NoticeKind) []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []json.RawMessage
	for _, p := range r.got {
		for _, n := range p.Notices {
			if n.UserID == userID && n.Type == kind {
				out = append(out, n.Data)
			}
		}
	}
	return out
}

// noCrowd counts no spectators.
type noCrowd struct{}

func (noCrowd) Spectators(string) int { return 0 }
func (noCrowd) TotalSpectators() int  { return 0 }

// LatestSeq says a newer event is always there: knowing nothing of what
// happened, every read goes to the database.
func (noCrowd) LatestSeq(string) (int, bool) { return math.MaxInt, true }

// platform is the game service wired as the server wires it: events to a
// room log, finished games settled by the pot, on a clock the test moves.
type platform struct {
	db         *bun.DB
	clock      *clock
	sink       *recorder
	eventLog   *eventlog.Log
	games      *game.Service
	settlement *settlement.Service
	// closed is maintenance mode: the platform closed to players.
	closed atomic.Bool
}

func newPlatform(t testing.TB) *platform {
	t.Helper()
	return newPlatformOn(t, dbtest.DB(t), newClock())
}

// newPlatformOn is newPlatform on database bdb and clock c: another
// instance of the platform when they are another's.
func newPlatformOn(t testing.TB, bdb *bun.DB, c *clock) *platform {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	sink := &recorder{}
	rooms := eventlog.New(bdb, sink)
	keys := chain.NewKeys(make([]byte, 32))
	// Settlement needs the platform's addresses, not the chain itself.
	m := money.New(bdb, nil, keys, solana.PublicKey{}, c.now, log, money.Confirmers{}, money.Deps{})
	p := &platform{db: bdb, clock: c, sink: sink, eventLog: rooms}
	p.games = game.New(bdb, c.now, log, game.Deps{Events: rooms, Notify: notify.New(bdb, rooms, c.now), Settle: payOut{p}, Live: noCrowd{},
		EscrowOf: func(gameID string) string { return keys.Escrow(gameID).PublicKey().String() }, Closed: p.closed.Load})
	p.settlement = settlement.New(bdb, rooms, p.games, m, chat.New(bdb, rooms, c.now), keys, integrity.NewLinks(bdb, c.now, integrity.Config{}), c.now, log, settlement.Deps{})
	return p
}

// payOut pays out every game's end with the settlement alone, holding
// nothing for review.
type payOut struct{ p *platform }

func (s payOut) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	pay := s.p.settlement.StartSettle(e.Tx, e.Game, e.Game.Players, e.Outcome, e.Reads)
	return func(ctx context.Context, e *game.Ending) error {
		out, err := pay(ctx, "")
		e.Paid(out)
		return err
	}, nil
}

// Amounts in USDC minor units.
const (
	usdc  = 1_000_000
	funds = 50 * usdc
	// stake is not a multiple of 100 once doubled, so the fee rounds down.
	stake = 1_234_567
)

// newPlayer stores a user holding amount on their available balance.
func (p *platform) newPlayer(t testing.TB, amount int64) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	u := users.User{WalletAddress: solana.NewWallet().PublicKey().String(), Username: "p_" + hex.EncodeToString(b),
		CreatedAt: p.clock.now(), UpdatedAt: p.clock.now()}
	if _, err := p.db.NewInsert().Model(&u).Returning("id").Exec(context.Background()); err != nil {
		t.Fatalf("create a user: %v", err)
	}
	if amount > 0 {
		p.move(t, "deposit", []money.Entry{{Account: money.Available(u.ID), Amount: amount}, {Account: money.Vault, Amount: -amount}})
	}
	return u.ID
}

// move posts a ledger transaction of its own.
func (p *platform) move(t testing.TB, kind string, entries []money.Entry) {
	t.Helper()
	err := db.Transact(context.Background(), p.db, func(ctx context.Context, tx db.Tx) error {
		_, err := money.Post(ctx, tx, nil, money.Posting{Kind: kind, Reference: kind + ":" + uuid.NewString(), Entries: entries})
		return err
	})
	if err != nil {
		t.Fatalf("post %s %v: %v", kind, entries, err)
	}
}

func (p *platform) balance(t testing.TB, account string) int64 {
	t.Helper()
	b, err := money.BalanceOf(context.Background(), p.db, account)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// balances is a user's available and locked balance.
type balances struct{ Available, Locked int64 }

func (p *platform) balances(t testing.TB, userID string) balances {
	t.Helper()
	return balances{p.balance(t, money.Available(userID)), p.balance(t, money.Locked(userID))}
}

func (p *platform) lobby(t testing.TB, gameType string, stake int64, settings string) string {
	t.Helper()
	creator := p.newPlayer(t, 0)
	var raw json.RawMessage
	if settings != "" {
		raw = json.RawMessage(settings)
	}
	l, err := p.games.CreateLobby(context.Background(), creator, gameType, stake, raw)
	if err != nil {
		t.Fatalf("create a %s lobby: %v", gameType, err)
	}
	return l.ID
}

// match queues two new players holding funds at a new lobby and returns the
// game they were matched into with its players in seat order.
func (p *platform) match(t testing.TB, gameType string, stake int64, settings string) (gameID, seat0, seat1 string) {
	t.Helper()
	lobby := p.lobby(t, gameType, stake, settings)
	seat0, seat1 = p.newPlayer(t, funds), p.newPlayer(t, funds)
	ctx := context.Background()
	if r, err := p.games.JoinQueue(ctx, seat0, lobby); err != nil || r.Status != "queued" {
		t.Fatalf("first join: got %+v, %v; want queued", r, err)
	}
	r, err := p.games.JoinQueue(ctx, seat1, lobby)
	if err != nil || r.Status != "matched" {
		t.Fatalf("second join: got %+v, %v; want matched", r, err)
	}
	return r.GameID, seat0, seat1
}

func (p *platform) act(userID, gameID, typ, move string) (game.ActResult, error) {
	a := game.Action{Type: typ}
	if move != "" {
		a.Move = json.RawMessage(move)
	}
	return p.games.Act(context.Background(), userID, gameID, a)
}

// play makes a move that must be accepted.
func (p *platform) play(t testing.TB, userID, gameID, move string) game.ActResult {
	t.Helper()
	r, err := p.act(userID, gameID, "move", move)
	if err != nil {
		t.Fatalf("move %s: %v", move, err)
	}
	return r
}

func (p *platform) game(t testing.TB, gameID string) game.Game {
	t.Helper()
	g, err := p.games.Game(context.Background(), gameID)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func (p *platform) events(t testing.TB, gameID string) []eventlog.Event {
	t.Helper()
	es, err := p.eventLog.Events(context.Background(), domain.GameStreamOf(gameID), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func (p *platform) eventNames(t testing.TB, gameID string) []string {
	t.Helper()
	var names []string
	for i, e := range p.events(t, gameID) {
		if e.Seq != i+1 {
			t.Errorf("event %d (%s) has seq %d, want %d", i, e.Name, e.Seq, i+1)
		}
		names = append(names, string(e.Name))
	}
	return names
}

func (p *platform) currentGame(t testing.TB, userID string) string {
	t.Helper()
	cg, err := p.games.CurrentGameOf(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	if cg == nil {
		return ""
	}
	return cg.GameID
}

// wantCode fails the test unless err carries the domain error code.
func wantCode(t testing.TB, what string, err error, code string) {
	t.Helper()
	if got := domain.ErrorCode(err); err == nil || got != code {
		t.Errorf("%s: got error %v, want code %s", what, err, code)
	}
}

func wantNames(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}
