package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/chain/chaintest"
	"wager/e2e/testserver"
)

var allTools = []string{"service_check_maintenance", "whoami", "list_live_games", "get_game", "verify_game", "get_game_state", "watch_game",
	"find_or_create_game", "submit_move", "send_chat_message", "get_balance", "donate", "place_bet", "place_market_order",
	"list_tournaments", "get_tournament", "join_tournament", "withdraw_tournament", "declare_bot"}

func TestToolList(t *testing.T) {
	url := startWager(t, nil)
	a := connect(t, url, nil, defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	res, err := a.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: input schema %v, output schema %v: want both", tool.Name, tool.InputSchema, tool.OutputSchema)
		}
		if len(tool.Description) < 60 {
			t.Errorf("%s: description %q is too short to say what it does, costs and returns", tool.Name, tool.Description)
		}
	}
	for _, want := range allTools {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s is missing from %v", want, names)
		}
	}
	if len(names) != len(allTools) {
		t.Errorf("got %d tools %v, want %d", len(names), names, len(allTools))
	}
}

func TestServiceCheckMaintenance(t *testing.T) {
	adminKey := newWallet(t)
	url := startWager(t, map[string]string{"ADMIN_WALLETS": adminKey.PublicKey().String()})
	a := connect(t, url, nil, defaultMaxSpendMinor, defaultMaxSpendHourMinor) // read-only: no wallet

	got := callOK[api.MaintenanceStatus](t, a, "service_check_maintenance", map[string]any{})
	if got.Maintenance || got.RetryAfterSeconds != 0 || got.Flags["maintenance-mode"] {
		t.Fatalf("maintenance off: got %+v", got)
	}

	admin := sdkClient(t, url, adminKey)
	if _, err := admin.API.PutAdminFeatureFlagsByNameWithResponse(t.Context(), "maintenance-mode", nil,
		api.PutAdminFeatureFlagsByNameJSONRequestBody{Enabled: true}); err != nil {
		t.Fatalf("admin switches maintenance on: %v", err)
	}
	got = callOK[api.MaintenanceStatus](t, a, "service_check_maintenance", map[string]any{})
	if !got.Maintenance || got.RetryAfterSeconds <= 0 || !got.Flags["maintenance-mode"] || !strings.Contains(got.Message, "maintenance") {
		t.Fatalf("maintenance on: got %+v", got)
	}
}

func TestReadOnlyWithoutWallet(t *testing.T) {
	url := startWager(t, nil)
	a := connect(t, url, nil, defaultMaxSpendMinor, defaultMaxSpendHourMinor)

	live := callOK[liveGamesOutput](t, a, "list_live_games", map[string]any{})
	if live.Games == nil || len(live.Games) != 0 {
		t.Fatalf("list_live_games on a new service: %+v, want an empty list", live)
	}
	// An API error is a tool error with the API's code and message.
	if msg := a.callErr(t, "get_game", map[string]any{"gameId": uuid.NewString()}); !strings.Contains(msg, "NOT_FOUND (HTTP 404)") {
		t.Errorf("get_game of no game: %q, want NOT_FOUND (HTTP 404)", msg)
	}
	for tool, args := range map[string]map[string]any{
		"get_balance":         {},
		"find_or_create_game": {},
		"donate":              {"gameId": uuid.NewString(), "amountMinor": 10000},
		"submit_move":         {"gameId": uuid.NewString(), "move": "rock"},
	} {
		if msg := a.callErr(t, tool, args); !strings.Contains(msg, "WALLET_REQUIRED") {
			t.Errorf("%s without a wallet: %q, want WALLET_REQUIRED", tool, msg)
		}
	}
}

// TestTwoAgentsPlayRPS has two agents, each with its own MCP server and
// wallet, find each other and play a free game of one round.
func TestTwoAgentsPlayRPS(t *testing.T) {
	url := startWager(t, map[string]string{"ANCHOR_INTERVAL": "1s"})
	alice := connect(t, url, newWallet(t), defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	bob := connect(t, url, newWallet(t), defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	ask := map[string]any{"gameType": "rps", "settings": map[string]any{"rounds": 1, "roundSeconds": 120}}

	first := callOK[findGameOutput](t, alice, "find_or_create_game", ask)
	if first.Status != "queued" || first.LobbyID == "" || !first.CreatedLobby || first.GameID != "" {
		t.Fatalf("alice, alone: %+v, want queued at a new lobby", first)
	}
	// Asking again while waiting keeps her place.
	if again := callOK[findGameOutput](t, alice, "find_or_create_game", ask); again.Status != "queued" || again.LobbyID != first.LobbyID {
		t.Fatalf("alice again: %+v, want queued at %s", again, first.LobbyID)
	}
	second := callOK[findGameOutput](t, bob, "find_or_create_game", ask)
	if second.Status != "matched" || second.GameID == "" || second.LobbyID != first.LobbyID {
		t.Fatalf("bob: %+v, want matched at alice's lobby %s", second, first.LobbyID)
	}
	game := second.GameID
	waitArgs := map[string]any{"gameType": "rps", "waitSeconds": 5}
	if got := callOK[findGameOutput](t, alice, "find_or_create_game", waitArgs); got.Status != "matched" || got.GameID != game {
		t.Fatalf("alice after bob joined: %+v, want matched in %s", got, game)
	}

	live := callOK[liveGamesOutput](t, alice, "list_live_games", map[string]any{})
	if !slices.ContainsFunc(live.Games, func(g api.GameLiveGame) bool { return g.GameId == game }) {
		t.Fatalf("list_live_games: %+v, want the game %s", live.Games, game)
	}
	state := callOK[map[string]any](t, bob, "get_game_state", map[string]any{"gameId": game})
	if state["gameId"] != game || state["status"] != "active" {
		t.Fatalf("get_game_state: %v", state)
	}
	callOK[api.ChatMessage](t, bob, "send_chat_message", map[string]any{"gameId": game, "text": "good luck"})

	// A spectator watches while both move; the watch ends with the game.
	carol := connect(t, url, newWallet(t), defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	var watch *mcp.CallToolResult
	var watchErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		watch, watchErr = carol.CallTool(t.Context(), &mcp.CallToolParams{Name: "watch_game",
			Arguments: map[string]any{"gameId": game, "seconds": 30}})
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d := callOK[api.GameDetail](t, bob, "get_game", map[string]any{"gameId": game})
		if d.SpectatorCount > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher never joined the game")
		}
	}
	if r := callOK[api.GameActResult](t, bob, "submit_move", map[string]any{"gameId": game, "move": "scissors"}); !r.Accepted {
		t.Fatalf("bob's move: %+v", r)
	}
	if msg := bob.callErr(t, "submit_move", map[string]any{"gameId": game, "move": "rock"}); !strings.Contains(msg, "ALREADY_MOVED (HTTP 409)") {
		t.Errorf("bob's second move in the round: %q, want ALREADY_MOVED (HTTP 409)", msg)
	}
	if msg := carol.callErr(t, "submit_move", map[string]any{"gameId": game, "move": "rock"}); !strings.Contains(msg, "NOT_A_PLAYER (HTTP 403)") {
		t.Errorf("a spectator's move: %q, want NOT_A_PLAYER (HTTP 403)", msg)
	}
	if r := callOK[api.GameActResult](t, alice, "submit_move", map[string]any{"gameId": game, "move": "rock"}); !r.Accepted {
		t.Fatalf("alice's move: %+v", r)
	}
	wg.Wait()
	if watchErr != nil || watch.IsError {
		t.Fatalf("watch_game: %v %s", watchErr, text(watch))
	}
	var watched watchOutput
	raw, _ := json.Marshal(watch.StructuredContent)
	json.Unmarshal(raw, &watched)
	names := []string{}
	for _, e := range watched.Events {
		names = append(names, e.Name)
	}
	if !watched.Completed || len(names) < 2 || names[0] != "joined" || names[len(names)-1] != "game:completed" ||
		!slices.Contains(names, "game:rps:round:reveal") {
		t.Errorf("watch_game saw %v (completed %t), want joined first, a reveal, game:completed last", names, watched.Completed)
	}

	aliceID := alice.srv.client.UserID()
	for name, a := range map[string]agent{"alice": alice, "bob": bob} {
		d := callOK[api.GameDetail](t, a, "get_game", map[string]any{"gameId": game})
		if d.Status != "completed" || d.Result == nil || d.Result.WinnerId == nil || *d.Result.WinnerId != aliceID {
			t.Errorf("%s reads the game: status %s, result %+v; want completed, won by alice %s", name, d.Status, d.Result, aliceID)
		}
	}
	// The game is in the public log once its end commits; bob checks it
	// there without trusting the service.
	var proved verifiedGame
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res := bob.call(t, "verify_game", map[string]any{"gameId": game})
		if !res.IsError {
			raw, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(raw, &proved)
			break
		}
		if msg := text(res); time.Now().After(deadline) || !strings.Contains(msg, "not in the public log (yet)") {
			t.Fatalf("verify_game: %s", msg)
		}
	}
	if proved.Outcome.WinnerUserID == nil || *proved.Outcome.WinnerUserID != aliceID || proved.CheckpointSize <= proved.Index {
		t.Errorf("verify_game proved %+v, want won by alice %s in a checkpoint past its index", proved, aliceID)
	}
	// An agent given the cluster's RPC URL also holds the log to its
	// newest anchor on Solana, which comes to cover the game.
	auditor := connectWith(t, config{URL: url, AppID: "mcp-test", SolanaRPC: url + "/dev/solana-rpc"})
	for deadline := time.Now().Add(15 * time.Second); proved.Anchor == nil || !proved.Anchor.Covers; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("verify_game with an RPC URL: %+v, want an anchor on chain covering record %d within 15 s", proved.Anchor, proved.Index)
		}
		proved = callOK[verifiedGame](t, auditor, "verify_game", map[string]any{"gameId": game})
	}
	if proved.Anchor.Size <= proved.Index || proved.Anchor.Signature == "" {
		t.Errorf("verify_game's anchor %+v, want a transaction anchoring more than record %d", proved.Anchor, proved.Index)
	}
}

// TestSpendingCap checks that money tools stop at the caps and move
// nothing when they refuse.
func TestSpendingCap(t *testing.T) {
	url := startWager(t, nil)
	key := newWallet(t)
	fund(t, url, key, 1_000_000)
	fan := connect(t, url, key, 50_000, 60_000)

	// A game to give to, between two others.
	// Bets and markets exist on staked games only.
	var players []agent
	for range 2 {
		k := newWallet(t)
		fund(t, url, k, 1_000_000)
		if _, err := sdkClient(t, url, k).Deposit(t.Context(), 100_000); err != nil {
			t.Fatalf("deposit: %v", err)
		}
		players = append(players, connect(t, url, k, defaultMaxSpendMinor, defaultMaxSpendHourMinor))
	}
	p1, p2 := players[0], players[1]
	callOK[findGameOutput](t, p1, "find_or_create_game", map[string]any{"stakeMinor": 100_000})
	game := callOK[findGameOutput](t, p2, "find_or_create_game", map[string]any{"stakeMinor": 100_000}).GameID
	if game == "" {
		t.Fatal("no game")
	}

	before := callOK[balanceOutput](t, fan, "get_balance", map[string]any{})
	if before.Balance.OnChain == nil || before.Balance.OnChain.UsdcMinor != 1_000_000 || before.Spending.MaxPerCallMinor != 50_000 || before.Spending.SpentLastHourMinor != 0 {
		t.Fatalf("balance before: %+v", before)
	}
	if msg := fan.callErr(t, "donate", map[string]any{"gameId": game, "amountMinor": 100_000}); !strings.Contains(msg, "SPENDING_CAP") ||
		!strings.Contains(msg, "per call") || !strings.Contains(msg, "nothing was spent") {
		t.Fatalf("a donation over the cap per call: %q", msg)
	}
	if msg := fan.callErr(t, "place_market_order", map[string]any{"gameId": game, "side": "buy", "outcomeId": uuid.NewString(),
		"priceMinor": 500_000, "shares": 1}); !strings.Contains(msg, "SPENDING_CAP") {
		t.Fatalf("a buy order over the cap per call: %q", msg)
	}
	lobbies := func() int {
		r, err := fan.srv.client.API.GetLobbiesWithResponse(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(*r.JSON200)
	}
	n := lobbies()
	if msg := fan.callErr(t, "find_or_create_game", map[string]any{"stakeMinor": 100_000}); !strings.Contains(msg, "SPENDING_CAP") {
		t.Fatalf("a stake over the cap per call: %q", msg)
	}
	if got := lobbies(); got != n {
		t.Fatalf("a refused stake opened a lobby: %d lobbies, want %d", got, n)
	}
	if got := callOK[balanceOutput](t, fan, "get_balance", map[string]any{}); !reflect.DeepEqual(got.Balance, before.Balance) || got.Spending.SpentLastHourMinor != 0 {
		t.Fatalf("after refusals: %+v, want nothing moved (%+v)", got, before)
	}

	// Within the caps it pays; the next one would pass the hour's cap.
	if d := callOK[api.PotDonationResult](t, fan, "donate", map[string]any{"gameId": game, "amountMinor": 40_000}); d.AmountMinor != 40_000 || d.Signature == "" {
		t.Fatalf("a donation within the caps: %+v", d)
	}
	if msg := fan.callErr(t, "donate", map[string]any{"gameId": game, "amountMinor": 30_000}); !strings.Contains(msg, "per hour") {
		t.Fatalf("a donation over the cap per hour: %q", msg)
	}
	after := callOK[balanceOutput](t, fan, "get_balance", map[string]any{})
	if after.Balance.OnChain == nil || after.Balance.OnChain.UsdcMinor != 960_000 || after.Spending.SpentLastHourMinor != 40_000 {
		t.Fatalf("after one donation: %+v, want 960000 on chain and 40000 spent", after)
	}
}

// With the Solana network not answering, whoami and get_balance still
// tell the agent its platform balance: the service answers onChain null
// and the tools pass it on instead of failing.
func TestBalanceToolsAnswerWhenTheChainDoesNot(t *testing.T) {
	srv := testserver.StartFresh(t, nil)
	key := newWallet(t)
	fund(t, srv.URL, key, 1_000_000)
	if _, err := sdkClient(t, srv.URL, key).Deposit(t.Context(), 100_000); err != nil {
		t.Fatalf("deposit: %v", err)
	}
	chaintest.TakeDown(t, srv.App.Money.Chain(), chaintest.Down{})
	a := connect(t, srv.URL, key, defaultMaxSpendMinor, defaultMaxSpendHourMinor)

	if me := callOK[whoamiOutput](t, a, "whoami", map[string]any{}); me.AvailableMinor != 100_000 {
		t.Errorf("whoami with the chain down: %+v, want availableMinor 100000", me)
	}
	b := callOK[balanceOutput](t, a, "get_balance", map[string]any{})
	if b.Balance.AvailableMinor != 100_000 || b.Balance.OnChain != nil {
		t.Errorf("get_balance with the chain down: %+v, want availableMinor 100000 and onChain null", b.Balance)
	}
}

// TestAgentsWaitingAtTwoLobbiesMeet covers two agents who each opened a
// lobby at the same moment: at their next calls they meet at one.
func TestAgentsWaitingAtTwoLobbiesMeet(t *testing.T) {
	url := startWager(t, nil)
	bobKey := newWallet(t)
	alice := connect(t, url, newWallet(t), defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	bob := connect(t, url, bobKey, defaultMaxSpendMinor, defaultMaxSpendHourMinor)

	// Bob's server opened a lobby and queued there while Alice's queued
	// at another empty one (lobby ids are random: either may give way).
	c := sdkClient(t, url, bobKey)
	l, err := c.API.PostLobbiesWithResponse(t.Context(), nil, api.LobbyRequest{GameType: "rps"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.API.PostLobbiesByIdJoinQueueWithResponse(t.Context(), l.JSON201.Id, nil); err != nil {
		t.Fatal(err)
	}
	bob.srv.queued = &queueEntry{lobby: l.JSON201.Id, release: func() {}}
	c2 := sdkClient(t, url, newWallet(t))
	l2, err := c2.API.PostLobbiesWithResponse(t.Context(), nil, api.LobbyRequest{GameType: "rps"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.srv.client.API.PostLobbiesByIdJoinQueueWithResponse(t.Context(), l2.JSON201.Id, nil); err != nil {
		t.Fatal(err)
	}
	alice.srv.queued = &queueEntry{lobby: l2.JSON201.Id, release: func() {}}

	first := callOK[findGameOutput](t, bob, "find_or_create_game", map[string]any{})
	second := callOK[findGameOutput](t, alice, "find_or_create_game", map[string]any{})
	if first.Status == "queued" {
		first = callOK[findGameOutput](t, bob, "find_or_create_game", map[string]any{})
	}
	if first.Status != "matched" || second.Status != "matched" || first.GameID != second.GameID {
		t.Fatalf("bob %+v, alice %+v: want both matched in one game", first, second)
	}
}

func TestStreamableHTTP(t *testing.T) {
	url := startWager(t, nil)
	s, err := newServer(config{URL: url, AppID: "mcp-test", MaxSpendMinor: 1, MaxSpendHourMinor: 1}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.httpHandler("secret"))
	t.Cleanup(srv.Close)

	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, nil)
	if _, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil); err == nil {
		t.Fatal("connected without the token")
	}
	authed := &http.Client{Transport: bearer{"secret"}}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: authed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got := callOK[api.MaintenanceStatus](t, agent{ClientSession: cs}, "service_check_maintenance", map[string]any{})
	if got.Maintenance {
		t.Fatalf("over HTTP: %+v", got)
	}
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestBetAndMarketOrder(t *testing.T) {
	url := startWager(t, nil)
	key := newWallet(t)
	fund(t, url, key, 2_000_000)
	if _, err := sdkClient(t, url, key).Deposit(t.Context(), 1_000_000); err != nil {
		t.Fatalf("deposit: %v", err)
	}
	fan := connect(t, url, key, defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	// Bets and markets are on staked games only.
	var players [2]agent
	for i := range players {
		pk := newWallet(t)
		fund(t, url, pk, 100_000)
		if _, err := sdkClient(t, url, pk).Deposit(t.Context(), 100_000); err != nil {
			t.Fatalf("player's deposit: %v", err)
		}
		players[i] = connect(t, url, pk, defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	}
	p1, p2 := players[0], players[1]
	callOK[findGameOutput](t, p1, "find_or_create_game", map[string]any{"stakeMinor": 100_000})
	game := callOK[findGameOutput](t, p2, "find_or_create_game", map[string]any{"stakeMinor": 100_000}).GameID
	onP1 := p1.srv.client.UserID()

	bet := callOK[api.PotBetResult](t, fan, "place_bet", map[string]any{"gameId": game, "onUserId": onP1, "amountMinor": 10_000})
	if bet.OnUserId != onP1 || bet.AmountMinor != 10_000 || bet.Signature == "" {
		t.Fatalf("place_bet: %+v", bet)
	}
	placed := callOK[api.MarketPlaced](t, fan, "place_market_order", map[string]any{"gameId": game, "side": "buy", "outcomeId": onP1,
		"priceMinor": 400_000, "shares": 2})
	if placed.Order.Status != "open" || placed.Order.Shares != 2 || placed.Order.PriceMinor != 400_000 {
		t.Fatalf("place_market_order: %+v", placed)
	}
	got := callOK[balanceOutput](t, fan, "get_balance", map[string]any{})
	if got.Balance.AvailableMinor != 200_000 || got.Spending.SpentLastHourMinor != 810_000 {
		t.Fatalf("after the bet and the order: %+v, want 200000 available, 810000 spent", got)
	}
	// A refused order is the API's error, and gives its share of the cap back.
	if msg := fan.callErr(t, "place_market_order", map[string]any{"gameId": game, "side": "buy", "outcomeId": onP1,
		"priceMinor": 300_000, "shares": 1}); !strings.Contains(msg, "INSUFFICIENT_FUNDS (HTTP 409)") {
		t.Fatalf("an order over the balance: %q", msg)
	}
	if msg := p1.callErr(t, "place_market_order", map[string]any{"gameId": game, "side": "buy", "outcomeId": onP1,
		"priceMinor": 300_000, "shares": 1}); !strings.Contains(msg, "FORBIDDEN (HTTP 403)") {
		t.Fatalf("a player's order: %q", msg)
	}
	if got := callOK[balanceOutput](t, fan, "get_balance", map[string]any{}); got.Spending.SpentLastHourMinor != 810_000 {
		t.Fatalf("after a refused order: spent %d, want 810000", got.Spending.SpentLastHourMinor)
	}
}

// TestQueuedElsewhere covers a wallet already waiting in a queue the
// server does not know of: it leaves it for the one it picks.
func TestQueuedElsewhere(t *testing.T) {
	url := startWager(t, nil)
	key := newWallet(t)
	a := connect(t, url, key, defaultMaxSpendMinor, defaultMaxSpendHourMinor)
	c := sdkClient(t, url, key)
	l, err := c.API.PostLobbiesWithResponse(t.Context(), nil, api.LobbyRequest{GameType: "rps", StakeMinor: 0,
		Settings: wager.Settings(map[string]any{"rounds": 5})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.API.PostLobbiesByIdJoinQueueWithResponse(t.Context(), l.JSON201.Id, nil); err != nil {
		t.Fatal(err)
	}
	got := callOK[findGameOutput](t, a, "find_or_create_game", map[string]any{"settings": map[string]any{"rounds": 3}})
	if got.Status != "queued" || got.LobbyID == l.JSON201.Id || !got.CreatedLobby {
		t.Fatalf("got %+v, want queued at a new lobby of 3 rounds", got)
	}
	r, err := c.API.GetLobbiesWithResponse(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, lobby := range *r.JSON200 {
		if want := map[string]int64{l.JSON201.Id: 0, got.LobbyID: 1}[lobby.Id]; lobby.Queued != want {
			t.Errorf("lobby %s has %d queued, want %d", lobby.Id, lobby.Queued, want)
		}
	}
}
