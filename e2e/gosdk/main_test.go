package wager_test

import (
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/cmd/server/app"
	"wager/db/dbtest"
	"wager/e2e/testserver"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// server is the whole app on a fresh database, served over real HTTP.
type server struct {
	*app.App
	URL string
}

// startServer starts the app with env on top of the defaults (the
// embedded chain with its faucet, no handshake limit per address) on a
// database of the test's own, listening on a local port.
func startServer(t *testing.T, env map[string]string) *server {
	t.Helper()
	s := testserver.StartFresh(t, env)
	return &server{App: s.App, URL: s.URL}
}

// newClient returns a client of s with a new wallet.
func (s *server) newClient(t *testing.T, opts ...wager.Option) *wager.Client {
	t.Helper()
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := wager.New(s.URL, append([]wager.Option{wager.WithWallet(key), wager.WithAppID("sdk-test")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fund gives the client's wallet usdc minor units and SOL from the
// development faucet.
func fund(t *testing.T, c *wager.Client, usdc int64) {
	t.Helper()
	if _, err := c.API.PostDevFaucetWithResponse(t.Context(), nil,
		api.PostDevFaucetJSONRequestBody{Address: c.Wallet().String(), AmountMinor: usdc}); err != nil {
		t.Fatalf("faucet: %v", err)
	}
}

// me returns the signed-in user's profile.
func me(t *testing.T, c *wager.Client) api.MyProfile {
	t.Helper()
	r, err := c.API.GetUsersMeWithResponse(t.Context(), nil)
	if err != nil {
		t.Fatalf("GET /users/me: %v", err)
	}
	return *r.JSON200
}

// matchStake is the stake of the games match starts: bets and markets
// exist on staked games only.
const matchStake = 100_000

// match starts an rps game of rounds, staked at matchStake, between two
// new players and returns them and the game's id.
func (s *server) match(t *testing.T, rounds int) (first, second *wager.Client, gameID string) {
	return s.matchFor(t, rounds, matchStake)
}

// matchFor is match at a stake of stake, which each player deposits
// first (0: a free game).
func (s *server) matchFor(t *testing.T, rounds int, stake int64) (first, second *wager.Client, gameID string) {
	t.Helper()
	ctx := t.Context()
	first, second = s.newClient(t), s.newClient(t)
	for _, c := range []*wager.Client{first, second} {
		fund(t, c, 1_000_000)
		if stake == 0 {
			continue
		}
		if _, err := c.Deposit(ctx, stake); err != nil {
			t.Fatalf("deposit the stake: %v", err)
		}
	}
	settings := map[string]any{"rounds": rounds, "roundSeconds": 120}
	l, err := first.API.PostLobbiesWithResponse(ctx, nil, api.LobbyRequest{GameType: "rps", StakeMinor: stake, Settings: wager.Settings(settings)})
	if err != nil {
		t.Fatalf("open a lobby: %v", err)
	}
	lobby := l.JSON201.Id
	if _, err := first.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobby, nil); err != nil {
		t.Fatalf("first joins: %v", err)
	}
	j, err := second.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobby, nil)
	if err != nil || j.JSON200.GameId == nil {
		t.Fatalf("second joins: %v %+v", err, j)
	}
	return first, second, *j.JSON200.GameId
}

// move plays a move in a game.
func move(t *testing.T, c *wager.Client, gameID, m string) {
	t.Helper()
	_, err := c.API.PostGamesByIdActionsWithBodyWithResponse(t.Context(), gameID, nil, "application/json",
		strings.NewReader(`{"type": "move", "move": "`+m+`"}`))
	if err != nil {
		t.Fatalf("move %s: %v", m, err)
	}
}
