package wager_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/chain/chaintest"
	"wager/domain/flags"
	"wager/domain/money"
)

// clock is a settable clock for the client.
type clock struct {
	mu sync.Mutex
	at time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.at = t
	c.mu.Unlock()
}

func TestSignInAndRenewal(t *testing.T) {
	s := startServer(t, nil)
	clk := &clock{at: time.Now()}
	c := s.newClient(t, wager.WithClock(clk.now))

	// The first call that needs a token signs in.
	if got := me(t, c); got.WalletAddress != c.Wallet().String() || got.Id != c.UserID() {
		t.Fatalf("GET /users/me: %+v, want the wallet %s and user %s", got, c.Wallet(), c.UserID())
	}
	first, expires := c.Token()
	if first == "" || time.Until(expires) < 23*time.Hour {
		t.Fatalf("token %q expires %v: want about 24 hours", first, expires)
	}
	me(t, c)
	if again, _ := c.Token(); again != first {
		t.Fatalf("a fresh token was replaced")
	}

	// Less than RenewBefore left: the next call signs in again first.
	clk.set(expires.Add(-wager.RenewBefore + time.Minute))
	me(t, c)
	second, _ := c.Token()
	if second == first {
		t.Fatalf("the token was not renewed with %v left", wager.RenewBefore-time.Minute)
	}
	clk.set(time.Now())

	// A token the server refuses (signed out) is replaced once after the 401.
	if _, err := c.API.PostAuthLogoutWithResponse(t.Context(), nil); err != nil {
		t.Fatalf("logout: %v", err)
	}
	if got := me(t, c); got.Id != c.UserID() {
		t.Fatalf("after the 401: %+v", got)
	}
	if third, _ := c.Token(); third == second || third == "" {
		t.Fatalf("the refused token was not replaced")
	}

	// Without a wallet there is nothing to sign in with: the 401 is the error.
	anon, err := wager.New(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = anon.API.GetUsersMeWithResponse(t.Context(), nil)
	var ae *wager.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.Code != "UNAUTHORIZED" {
		t.Fatalf("anonymous GET /users/me: %v, want a 401 UNAUTHORIZED *APIError", err)
	}
	// API errors in general.
	_, err = anon.API.GetGamesByIdWithResponse(t.Context(), uuid.NewString(), nil)
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != "NOT_FOUND" || ae.Message == "" {
		t.Fatalf("an unknown game: %v, want a 404 NOT_FOUND *APIError", err)
	}
}

// With the Solana network not answering, the balance still reads: the
// platform balance, and OnChain nil (the document says onChain may be
// null) rather than an error or a zero balance.
func TestBalanceReadsWhenTheChainDoesNotAnswer(t *testing.T) {
	s := startServer(t, nil)
	c := s.newClient(t)
	fund(t, c, 1_000_000)
	if _, err := c.Deposit(t.Context(), 100_000); err != nil {
		t.Fatalf("deposit: %v", err)
	}
	chaintest.TakeDown(t, s.Money.Chain(), chaintest.Down{})
	r, err := c.API.GetWalletsMeBalanceWithResponse(t.Context(), nil)
	if err != nil {
		t.Fatalf("balance with the chain down: %v", err)
	}
	if r.JSON200 == nil {
		t.Fatalf("balance with the chain down: %d %s, want 200", r.StatusCode(), r.Body)
	}
	if r.JSON200.AvailableMinor != 100_000 || r.JSON200.OnChain != nil {
		t.Errorf("balance with the chain down: %s, want availableMinor 100000 and onChain null", r.Body)
	}
}

func TestOutdatedSDKIsTypedError(t *testing.T) {
	s := startServer(t, map[string]string{"MIN_SDK_VERSION": "9.0.0"})
	c := s.newClient(t)
	_, err := c.API.GetGamesAvailableWithResponse(t.Context(), nil)
	var up *wager.UpgradeRequiredError
	if !errors.As(err, &up) || up.MinSDKVersion != "9.0.0" {
		t.Fatalf("GET /games/available below the minimum: %v, want *UpgradeRequiredError for 9.0.0", err)
	}
	var ae *wager.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUpgradeRequired || ae.Code != "SDK_VERSION_OUTDATED" {
		t.Fatalf("the 426 as an *APIError: %+v", ae)
	}
	// Signing in is version-checked too.
	if err := c.SignIn(t.Context()); !errors.As(err, &up) {
		t.Fatalf("sign-in below the minimum: %v, want *UpgradeRequiredError", err)
	}
}

// abuseServer starts a server where GET /users/me and PATCH
// /users/me/profile allow one request a minute per caller, with the
// abuse-controls flag on.
func abuseServer(t *testing.T) *server {
	t.Helper()
	s := startServer(t, map[string]string{"ABUSE_THRESHOLD": "1000",
		"ABUSE_OVERRIDES": "GET /users/me=1,PATCH /users/me/profile=1"})
	if _, err := s.Flags.Set(context.Background(), flags.AbuseControls, true, "test"); err != nil {
		t.Fatal(err)
	}
	return s
}

// onChainUSDC is the wallet's USDC on chain.
func onChainUSDC(t *testing.T, c *wager.Client) int64 {
	t.Helper()
	r, err := c.API.GetWalletsMeBalanceWithResponse(t.Context(), nil)
	if err != nil {
		t.Fatalf("balance: %v", err)
	}
	if r.JSON200 == nil || r.JSON200.OnChain == nil {
		t.Fatalf("balance without the wallet's on-chain holdings: %d %s", r.StatusCode(), r.Body)
	}
	return r.JSON200.OnChain.UsdcMinor
}

func treasury(t *testing.T, s *server) int64 {
	t.Helper()
	n, err := money.BalanceOf(context.Background(), s.DB, money.Treasury)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPaymentRequiredIsPaidUnderTheCap(t *testing.T) {
	s := abuseServer(t)
	price := s.Config.AbusePrice
	c := s.newClient(t, wager.WithAutoPay(price, 2*price))
	fund(t, c, 1_000_000)
	// The one free request of the minute of each endpoint.
	me(t, c)
	free := "free"
	if _, err := c.API.PatchUsersMeProfileWithResponse(t.Context(), nil, api.ProfileRequest{Bio: &free}); err != nil {
		t.Fatalf("PATCH /users/me/profile: %v", err)
	}
	wallet, fees := onChainUSDC(t, c), treasury(t, s)

	// Over the threshold: paid once, then served; the body is sent again.
	bio := "paid for"
	r, err := c.API.PatchUsersMeProfileWithResponse(t.Context(), nil, api.ProfileRequest{Bio: &bio})
	if err != nil {
		t.Fatalf("PATCH /users/me/profile: %v", err)
	}
	if r.JSON200 == nil || r.JSON200.Bio != bio {
		t.Fatalf("PATCH /users/me/profile: %+v", r.JSON200)
	}
	if got := wallet - onChainUSDC(t, c); got != price {
		t.Errorf("the wallet paid %d on chain, want one payment of %d", got, price)
	}
	if got := treasury(t, s) - fees; got != price {
		t.Errorf("the treasury got %d, want %d", got, price)
	}

	// The next one over the threshold is paid again, once.
	if got := me(t, c).Bio; got != bio {
		t.Fatalf("GET /users/me after paying: bio %q, want %q", got, bio)
	}
	if got := wallet - onChainUSDC(t, c); got != 2*price {
		t.Errorf("the wallet paid %d on chain, want %d (two payments of %d)", got, 2*price, price)
	}
	if got := treasury(t, s) - fees; got != 2*price {
		t.Errorf("the treasury got %d, want %d", got, 2*price)
	}
	if got := c.SpentLastHour(); got != 2*price {
		t.Errorf("SpentLastHour: %d, want %d", got, 2*price)
	}
}

func TestPaymentRequiredOverTheCapPaysNothing(t *testing.T) {
	s := abuseServer(t)
	price := s.Config.AbusePrice
	for _, c := range []struct {
		name   string
		opts   []wager.Option
		before int // requests paid before the refused one
	}{
		{"no automatic payment", nil, 0},
		{"over the cap per request", []wager.Option{wager.WithAutoPay(price-1, 100*price)}, 0},
		{"over the cap per hour", []wager.Option{wager.WithAutoPay(price, 3*price/2)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := s.newClient(t, c.opts...)
			fund(t, cl, 1_000_000)
			me(t, cl)
			for range c.before {
				me(t, cl)
			}
			wallet, fees := onChainUSDC(t, cl), treasury(t, s)
			_, err := cl.API.GetUsersMeWithResponse(t.Context(), nil)
			var pe *wager.PaymentRequiredError
			if !errors.As(err, &pe) || pe.Paid {
				t.Fatalf("GET /users/me over the threshold: %v, want an unpaid *PaymentRequiredError", err)
			}
			if pe.AmountMinor != price || pe.Asset == "" || pe.PayTo == "" || pe.Network == "" ||
				pe.Requirement.X402Version != 2 || len(pe.Requirement.Accepts) == 0 {
				t.Errorf("the requirement: %+v", pe)
			}
			var ae *wager.APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusPaymentRequired || ae.Code != "PAYMENT_REQUIRED" {
				t.Errorf("the 402 as an *APIError: %+v", ae)
			}
			if got := wallet - onChainUSDC(t, cl); got != 0 {
				t.Errorf("the wallet paid %d on chain, want nothing", got)
			}
			if got := treasury(t, s) - fees; got != 0 {
				t.Errorf("the treasury got %d, want nothing", got)
			}
			if got := cl.SpentLastHour(); got != int64(c.before)*price {
				t.Errorf("SpentLastHour: %d, want %d", got, int64(c.before)*price)
			}
		})
	}
}

// connKiller remembers the connections a dialer opens, to break them.
type connKiller struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (k *connKiller) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		k.mu.Lock()
		k.conns = append(k.conns, conn)
		k.mu.Unlock()
	}
	return conn, err
}

// breakAll closes every connection opened so far, as a network failure
// would.
func (k *connKiller) breakAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		c.Close()
	}
	k.conns = nil
}

func TestFollowGameAcrossDisconnects(t *testing.T) {
	s := startServer(t, nil)
	first, second, game := s.match(t, 5)
	killer := &connKiller{}
	watcher := s.newClient(t, wager.WithWebSocketDialer(&websocket.Dialer{NetDialContext: killer.dial, HandshakeTimeout: 10 * time.Second}))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f, err := watcher.FollowGame(ctx, game)
	if err != nil {
		t.Fatalf("FollowGame: %v", err)
	}
	joined := <-f.Events
	if joined.Name != wager.EventJoined || len(joined.Data) == 0 {
		t.Fatalf("first event: %+v, want joined with the state", joined)
	}

	followed := collect(f.Events)
	reveals := func() int {
		n := 0
		for _, e := range followed.events() {
			if e.Name == "game:rps:round:reveal" {
				n++
			}
		}
		return n
	}
	seen := func() int { return len(followed.events()) }
	// Three won rounds; the socket breaks before each, and the moves are
	// made while it is down. Each round's reveal arrives (over a new
	// socket) before the next round.
	for round := range 3 {
		killer.breakAll()
		move(t, first, game, "rock")
		move(t, second, game, "scissors")
		for deadline := time.Now().Add(10 * time.Second); reveals() <= round; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d's reveal never arrived; got %d events", round+1, seen())
			}
		}
	}
	select {
	case <-followed.done:
	case <-ctx.Done():
		t.Fatalf("the events did not end with game:completed; got %d", seen())
	}
	got := followed.events()
	if err := f.Err(); err != nil {
		t.Fatalf("Err after completion: %v", err)
	}
	if f.Reconnects() < 2 {
		t.Errorf("Reconnects: %d, want at least 2 (one before each of the first two reveals)", f.Reconnects())
	}

	// Every recorded event after the join, once, in order.
	after := joined.Seq
	r, err := watcher.API.GetGamesByIdEventsWithResponse(t.Context(), game, &api.GetGamesByIdEventsParams{After: &after})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range r.JSON200.Events {
		want = append(want, eventKey(e.Seq, e.Event))
	}
	var have []string
	for _, e := range got {
		if e.Name == wager.EventSpectators {
			continue
		}
		have = append(have, eventKey(e.Seq, e.Name))
	}
	if !slices.Equal(have, want) {
		t.Fatalf("events followed:\n%v\nwant the record after seq %d:\n%v", have, after, want)
	}
	if last := got[len(got)-1]; last.Name != wager.EventCompleted {
		t.Errorf("last event: %s, want game:completed", last.Name)
	}
	for _, e := range got {
		if e.Name != wager.EventSpectators && !json.Valid(e.Data) {
			t.Errorf("event %d %s: data %q is not JSON", e.Seq, e.Name, e.Data)
		}
	}
	t.Logf("%d events after seq %d, %d reconnects", len(have), after, f.Reconnects())
}

// collector gathers a follow's events in the background; done closes
// when their channel does.
type collector[E any] struct {
	done <-chan struct{}
	mu   sync.Mutex
	got  []E
}

func collect[E any](events <-chan E) *collector[E] {
	done := make(chan struct{})
	c := &collector[E]{done: done}
	go func() {
		defer close(done)
		for ev := range events {
			c.mu.Lock()
			c.got = append(c.got, ev)
			c.mu.Unlock()
		}
	}()
	return c
}

// events returns the events gathered so far.
func (c *collector[E]) events() []E {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

func eventKey(seq int64, name string) string {
	b, _ := json.Marshal([]any{seq, name})
	return string(b)
}
