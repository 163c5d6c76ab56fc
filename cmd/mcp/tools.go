package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager.example.com/sdk/verify"
)

// addTools registers every tool.
func (s *server) addTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s.mcp, &mcp.Tool{Name: "service_check_maintenance", Annotations: readOnly,
		Description: "Reports whether the Wager service is in maintenance (then games cannot be started or played and " +
			"other tools answer MAINTENANCE errors), with a message, when to check again (retryAfterSeconds, 0 when up) and every " +
			"feature flag. Free; needs no wallet."}, s.checkMaintenance)
	addTool(s.mcp, &mcp.Tool{Name: "whoami", Annotations: readOnly,
		Description: "Tells who you are on Wager: your user id (scores, winnerId, onUserId and outcomeId name users by it, so " +
			"compare them with it to know whether you won), username, wallet address and available platform balance in USDC " +
			"minor units. Free; needs the wallet."}, s.whoami)
	addTool(s.mcp, &mcp.Tool{Name: "list_live_games", Annotations: readOnly,
		Description: "Lists the games being played right now, most watched first: id, game type, players, stake and pot in " +
			"USDC minor units (1 USDC = 1000000), spectator count. Free; needs no wallet."}, s.listLiveGames)
	addTool(s.mcp, &mcp.Tool{Name: "get_game", Annotations: readOnly,
		Description: "Returns a game's public record: type, status (waiting, active, completed, cancelled), players, stake, " +
			"pot, settings and, once completed, the result (winnerId, draw, payout) and round history. Free; needs no wallet."}, s.getGame)
	addTool(s.mcp, &mcp.Tool{Name: "verify_game", Annotations: readOnly,
		Description: "Verifies a finished game without trusting the service: its record is in the public log of games under " +
			"a checkpoint signed by the log's key, the log only grew since the last checkpoint this tool saw, and the game's " +
			"own events (moves, reveals checked against their commitments) replay to the outcome, fee and pot payout the record " +
			"states, which its game:completed event tells too, and its donations are its game:donation events' sum; with the server started with a Solana RPC URL (WAGER_SOLANA_RPC), also that the log extends its newest " +
			"anchor on chain. Returns the record's index, the checkpoint's size, the anchor checked, the outcome and every " +
			"payout; a check that fails is an " +
			"error saying what does not hold. A game is logged once its money is final. Free; needs no wallet."}, s.verifyGame)
	addTool(s.mcp, &mcp.Tool{Name: "get_game_state", Annotations: readOnly,
		Description: "Returns the live state of an active game as players and spectators see it: round number and phase, " +
			"deadline and remaining time, scores by user id, revealed rounds and who has submitted this round (never a choice " +
			"before its reveal). Use it to know when to submit_move. Free; needs the wallet (signed in). A game that is not " +
			"active answers GAME_NOT_ACTIVE: read it with get_game."}, s.getGameState)
	addTool(s.mcp, &mcp.Tool{Name: "watch_game", Annotations: readOnly,
		InputSchema: inputSchema[watchInput](func(p map[string]*jsonschema.Schema) {
			p["seconds"].Minimum, p["seconds"].Maximum, p["seconds"].Default = ptr(1.0), ptr(60.0), json.RawMessage("10")
		}),
		Description: "Follows an active game live for up to `seconds` (1-60, default 10) and returns the events seen, in " +
			"order: the state when watching began (joined), round starts, submissions, reveals with scores, chat, donations, " +
			"bets, market changes, and game:completed (which ends the watch early). Free; needs the wallet (signed in)."}, s.watchGame)
	addTool(s.mcp, &mcp.Tool{Name: "find_or_create_game",
		InputSchema: inputSchema[findGameInput](func(p map[string]*jsonschema.Schema) {
			p["gameType"].Default = json.RawMessage(`"rps"`)
			p["stakeMinor"].Minimum, p["stakeMinor"].Default = ptr(0.0), json.RawMessage("0")
			p["waitSeconds"].Minimum, p["waitSeconds"].Maximum, p["waitSeconds"].Default = ptr(0.0), ptr(60.0), json.RawMessage("0")
		}),
		Description: "Finds an opponent: joins the queue of an open lobby of the game type and stake (and settings, when " +
			"given) where someone is waiting, or else queues at such a lobby or opens one. Returns status matched with the " +
			"gameId once two players are paired, or queued with the lobbyId while waiting; call it again (or give " +
			"waitSeconds) until matched. When you are already in an active game it returns that game. Two agents calling it " +
			"with the same game type and stake are matched with each other. A stake (USDC minor units per player, 0 = free " +
			"game) is locked from your platform balance when matched and goes to the winner (minus a 1% fee). Every call " +
			"checks its stake against the spending cap before anything changes (refused over it, and you stay where you " +
			"were): the stake counts as spent from the call that queues you for it, stays counted once a game starts, and " +
			"is given back when a later call moves you out of that queue without a game (to another stake or lobby). Needs " +
			"the wallet."}, s.findOrCreateGame)
	addTool(s.mcp, &mcp.Tool{Name: "submit_move",
		Description: "Plays your move in an active game you are a player of: for rps, move is \"rock\", \"paper\" or " +
			"\"scissors\" (one per round; the round is revealed when both have moved or its timer runs out); for connect4, " +
			"{\"column\": 0-6}. resign: true gives up the game. Returns whether it was accepted and the game's status. Free; " +
			"needs the wallet. Errors: NOT_A_PLAYER, NOT_YOUR_TURN, ALREADY_MOVED, INVALID_MOVE, GAME_NOT_ACTIVE."}, s.submitMove)
	addTool(s.mcp, &mcp.Tool{Name: "send_chat_message",
		Description: "Posts a message (1-500 characters) in a game's chat, as a player or a spectator, and returns it. " +
			"Free; needs the wallet."}, s.sendChatMessage)
	addTool(s.mcp, &mcp.Tool{Name: "get_balance", Annotations: readOnly,
		Description: "Returns your platform balance (available and locked, in USDC minor units; 1 USDC = 1000000), your " +
			"wallet's on-chain USDC and SOL (onChain is null when the Solana network did not answer in time; the platform " +
			"balance is there all the same), your deposit address, and the spending cap of this server with what was spent in " +
			"the last hour. Free; needs the wallet."}, s.getBalance)
	addTool(s.mcp, &mcp.Tool{Name: "donate",
		InputSchema: inputSchema[donateInput](func(p map[string]*jsonschema.Schema) { p["amountMinor"].Minimum = ptr(10000.0) }),
		Description: "COSTS MONEY: sends amountMinor USDC minor units (at least 10000 = 0.01 USDC) from your wallet on chain " +
			"to an active game's pot, which goes to the winner; only spectators (not its players) may donate. Refused, with " +
			"nothing sent, when over the spending cap. Returns the confirmed donation with its Solana signature. Needs the wallet."}, s.donate)
	addTool(s.mcp, &mcp.Tool{Name: "place_bet",
		InputSchema: inputSchema[betInput](func(p map[string]*jsonschema.Schema) { p["amountMinor"].Minimum = ptr(10000.0) }),
		Description: "COSTS MONEY: bets amountMinor USDC minor units (at least 10000) from your wallet on chain on one player " +
			"(onUserId) of an active game, in its pari-mutuel pool; open to non-players until the first round is decided " +
			"(then BETTING_CLOSED). Winning bets share the pool minus 1%. Refused, with nothing sent, when over the spending " +
			"cap. Returns the confirmed bet. Needs the wallet."}, s.placeBet)
	addTool(s.mcp, &mcp.Tool{Name: "place_market_order",
		InputSchema: inputSchema[orderInput](func(p map[string]*jsonschema.Schema) {
			p["side"].Enum = []any{"buy", "sell"}
			p["priceMinor"].Minimum, p["priceMinor"].Maximum, p["priceMinor"].MultipleOf = ptr(10000.0), ptr(990000.0), ptr(10000.0)
			p["shares"].Minimum, p["shares"].Maximum = ptr(1.0), ptr(100000.0)
			p["timeInForce"].Enum = []any{"GTC", "IOC"}
		}),
		Description: "COSTS MONEY (buy): places a limit order in an active game's prediction market. A share of an outcome " +
			"(outcomeId = a player's user id) pays 1000000 if that player wins, 0 if not, 500000 on a draw. A buy locks " +
			"priceMinor x shares of your platform balance (counted against the spending cap; refused over it); a sell locks " +
			"shares you hold. Prices are multiples of 10000 from 10000 to 990000. timeInForce GTC (default) leaves the rest " +
			"on the book, IOC cancels it. Players of the game may not trade it. Returns the order and its trades. Needs the wallet."},
		s.placeMarketOrder)
}

func ptr[T any](v T) *T { return &v }

// addTool registers a tool with input and output schemas that every MCP
// client accepts: the ones inferred from In and Out (unless the tool has
// its own), with each boolean schema (true: any value, which Go's
// inference gives an interface or a map of them, and which MCP's schema
// for tools does not allow) replaced by an object schema that says the
// same.
func addTool[In, Out any](srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if t.InputSchema == nil {
		t.InputSchema = inputSchema[In](func(map[string]*jsonschema.Schema) {})
	}
	if t.OutputSchema == nil && reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		sch, err := jsonschema.For[Out](schemaOptions)
		if err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", t.Name, err))
		}
		t.OutputSchema = sch
	}
	t.InputSchema = objectSchemas(t.Name, t.InputSchema.(*jsonschema.Schema))
	if t.OutputSchema != nil {
		t.OutputSchema = objectSchemas(t.Name, t.OutputSchema.(*jsonschema.Schema))
	}
	mcp.AddTool(srv, t, h)
}

// anyValue is the object schema of any JSON value.
var anyValue = map[string]any{"description": "any JSON value"}

// objectSchemas returns s with every boolean subschema replaced by an
// object schema (anyValue for true, {not: anyValue} for false).
func objectSchemas(tool string, s *jsonschema.Schema) *jsonschema.Schema {
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool %s: encode its schema: %v", tool, err))
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		panic(fmt.Sprintf("tool %s: decode its schema: %v", tool, err))
	}
	raw, _ = json.Marshal(noBooleans(tree))
	out := &jsonschema.Schema{}
	if err := json.Unmarshal(raw, out); err != nil {
		panic(fmt.Sprintf("tool %s: decode its schema: %v", tool, err))
	}
	return out
}

// Keywords whose value is a schema, a list of schemas, or an object of
// schemas (JSON Schema 2020-12).
var (
	schemaKeywords   = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema"}
	schemaLists      = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaObjectMaps = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// noBooleans replaces the boolean schemas of a decoded schema.
func noBooleans(v any) any {
	switch v := v.(type) {
	case bool:
		if v {
			return anyValue
		}
		return map[string]any{"not": anyValue}
	case map[string]any:
		for _, k := range schemaKeywords {
			if sub, ok := v[k]; ok {
				v[k] = noBooleans(sub)
			}
		}
		for _, k := range schemaLists {
			if list, ok := v[k].([]any); ok {
				for i := range list {
					list[i] = noBooleans(list[i])
				}
			}
		}
		for _, k := range schemaObjectMaps {
			if m, ok := v[k].(map[string]any); ok {
				for name := range m {
					m[name] = noBooleans(m[name])
				}
			}
		}
	}
	return v
}

// schemaOptions describe the generated client's types whose JSON is their
// own (unions of the document's oneOf), which inference would take for
// closed empty objects.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[api.GameSettings](): {Type: "object", Description: "the game type's settings, e.g. rps {rounds, roundSeconds}"},
}}

// inputSchema is the schema inferred from T with edit's limits on its
// properties.
func inputSchema[T any](edit func(map[string]*jsonschema.Schema)) *jsonschema.Schema {
	sch, err := jsonschema.For[T](schemaOptions)
	if err != nil {
		panic(err)
	}
	edit(sch.Properties)
	return sch
}

// parseID checks an id argument and returns it in its canonical form.
func parseID(name, id string) (string, error) {
	u, err := uuid.Parse(strings.TrimSpace(id))
	if err != nil {
		return "", fmt.Errorf("VALIDATION_ERROR: %s %q is not a UUID", name, id)
	}
	return u.String(), nil
}

type noInput struct{}

type gameInput struct {
	GameID string `json:"gameId" jsonschema:"the game's id (a UUID)"`
}

// verifiedGame is what verify_game proved.
type verifiedGame struct {
	GameID          string          `json:"gameId"`
	Index           int64           `json:"index" jsonschema:"the record's index in the public log"`
	Log             string          `json:"log" jsonschema:"the log's origin"`
	CheckpointSize  int64           `json:"checkpointSize" jsonschema:"the records of the signed checkpoint that includes it"`
	ConsistentWith  *int64          `json:"consistentWith,omitempty" jsonschema:"the size of the checkpoint seen before, which the log was proved to extend"`
	Anchor          *verifiedAnchor `json:"anchor,omitempty" jsonschema:"with a Solana RPC URL: the newest anchor on chain within the checkpoint, which the log was proved to extend"`
	Outcome         verify.Outcome  `json:"outcome"`
	PotMinor        int64           `json:"potMinor"`
	FeeMinor        int64           `json:"feeMinor"`
	Payouts         []verify.Payout `json:"payouts"`
	IntegrityReview string          `json:"integrityReview" jsonschema:"none, released or voided"`
}

// verifiedAnchor is the anchor on Solana verify_game checked.
type verifiedAnchor struct {
	Size      int64  `json:"size" jsonschema:"the records of the tree anchored"`
	Covers    bool   `json:"covers" jsonschema:"whether the anchored tree holds this game's record: it existed at the anchor's slot"`
	Slot      uint64 `json:"slot"`
	Signature string `json:"signature" jsonschema:"the Solana transaction that wrote it (base58)"`
}

func (s *server) verifyGame(ctx context.Context, _ *mcp.CallToolRequest, in gameInput) (*mcp.CallToolResult, verifiedGame, error) {
	if _, err := parseID("gameId", in.GameID); err != nil {
		return nil, verifiedGame{}, err
	}
	c, err := s.verifier.Game(ctx, in.GameID)
	if err != nil {
		return nil, verifiedGame{}, fmt.Errorf("NOT VERIFIED: %w", err)
	}
	r := c.Record
	out := verifiedGame{GameID: r.GameID, Index: r.Index, Log: c.Checkpoint.Origin, CheckpointSize: c.Checkpoint.Tree.N,
		Outcome: r.Outcome, PotMinor: r.Money.PotMinor, FeeMinor: r.Money.FeeMinor, Payouts: r.Money.Payouts,
		IntegrityReview: r.Money.Integrity}
	if c.Previous != nil {
		out.ConsistentWith = &c.Previous.Tree.N
	}
	if a := c.Anchor; a != nil {
		out.Anchor = &verifiedAnchor{Size: *a.Size, Covers: r.Index < *a.Size, Slot: a.Slot, Signature: a.Signature}
	}
	return nil, out, nil
}

func (s *server) checkMaintenance(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, api.MaintenanceStatus, error) {
	r, err := s.client.API.GetServiceCheckMaintenanceWithResponse(ctx, nil)
	if err != nil {
		return nil, api.MaintenanceStatus{}, toolError(err)
	}
	if r.JSON200 == nil {
		return nil, api.MaintenanceStatus{}, fmt.Errorf("the service answered %d", r.StatusCode())
	}
	return nil, *r.JSON200, nil
}

type liveGamesOutput struct {
	Games []api.GameLiveGame `json:"games" jsonschema:"active games, most watched first"`
}

func (s *server) listLiveGames(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, liveGamesOutput, error) {
	r, err := s.client.API.GetGamesLiveWithResponse(ctx, nil)
	if err != nil {
		return nil, liveGamesOutput{}, toolError(err)
	}
	out := liveGamesOutput{Games: []api.GameLiveGame{}}
	if r.JSON200 != nil && *r.JSON200 != nil {
		out.Games = *r.JSON200
	}
	return nil, out, nil
}

// userRef names a user: the id the API keys scores, winners and outcomes
// by, and the username people know.
type userRef struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
}

type gameOutput struct {
	api.GameDetail
	Winner *userRef `json:"winner,omitempty" jsonschema:"the winner with their username, once the game is won (absent while it runs and after a draw)"`
}

func (s *server) getGame(ctx context.Context, _ *mcp.CallToolRequest, in gameInput) (*mcp.CallToolResult, gameOutput, error) {
	if _, err := parseID("gameId", in.GameID); err != nil {
		return nil, gameOutput{}, err
	}
	r, err := s.client.API.GetGamesByIdWithResponse(ctx, in.GameID, nil)
	if err != nil {
		return nil, gameOutput{}, toolError(err)
	}
	if r.JSON200 == nil {
		return nil, gameOutput{}, fmt.Errorf("the service answered %d", r.StatusCode())
	}
	out := gameOutput{GameDetail: *r.JSON200}
	if w := out.WinnerId; w != nil && *w != "" {
		out.Winner = &userRef{UserID: *w}
		for _, p := range out.Players {
			if p.UserId == *w {
				out.Winner.Username = p.Username
			}
		}
	}
	return nil, out, nil
}

// players returns a game's players with their usernames, for tools whose
// answers key things by user id.
func (s *server) players(ctx context.Context, gameID string) ([]userRef, error) {
	r, err := s.client.API.GetGamesByIdWithResponse(ctx, gameID, nil)
	if err != nil {
		return nil, toolError(err)
	}
	if r.JSON200 == nil {
		return nil, fmt.Errorf("the service answered %d", r.StatusCode())
	}
	out := make([]userRef, 0, len(r.JSON200.Players))
	for _, p := range r.JSON200.Players {
		out = append(out, userRef{UserID: p.UserId, Username: p.Username})
	}
	return out, nil
}

type whoamiOutput struct {
	UserID         string `json:"userId" jsonschema:"your user id: scores, winnerId, onUserId and outcomeId name users by it"`
	Username       string `json:"username"`
	WalletAddress  string `json:"walletAddress" jsonschema:"the Solana wallet this server signs with"`
	AvailableMinor int64  `json:"availableMinor" jsonschema:"your available platform balance in USDC minor units (1 USDC = 1000000)"`
}

func (s *server) whoami(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, whoamiOutput, error) {
	if err := s.needWallet(); err != nil {
		return nil, whoamiOutput{}, err
	}
	me, err := s.client.API.GetUsersMeWithResponse(ctx, nil)
	if err != nil {
		return nil, whoamiOutput{}, toolError(err)
	}
	bal, err := s.client.API.GetWalletsMeBalanceWithResponse(ctx, nil)
	if err != nil {
		return nil, whoamiOutput{}, toolError(err)
	}
	if me.JSON200 == nil || bal.JSON200 == nil {
		return nil, whoamiOutput{}, fmt.Errorf("the service answered %d and %d", me.StatusCode(), bal.StatusCode())
	}
	return nil, whoamiOutput{UserID: me.JSON200.Id, Username: me.JSON200.Username, WalletAddress: s.client.Wallet().String(),
		AvailableMinor: bal.JSON200.AvailableMinor}, nil
}

func (s *server) getGameState(ctx context.Context, _ *mcp.CallToolRequest, in gameInput) (*mcp.CallToolResult, map[string]any, error) {
	if err := s.needWallet(); err != nil {
		return nil, nil, err
	}
	id, err := parseID("gameId", in.GameID)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.client.API.GetGamesByIdStateWithResponse(ctx, id, nil)
	if err != nil {
		return nil, nil, toolError(err)
	}
	var state map[string]any
	if err := json.Unmarshal(r.Body, &state); err != nil {
		return nil, nil, fmt.Errorf("the game state is not a JSON object: %w", err)
	}
	// The state keys scores and submissions by user id: name them.
	if state["users"], err = s.players(ctx, in.GameID); err != nil {
		return nil, nil, err
	}
	return nil, state, nil
}

type watchInput struct {
	GameID  string `json:"gameId" jsonschema:"the game's id (a UUID)"`
	Seconds int    `json:"seconds,omitempty" jsonschema:"how long to watch, 1-60 seconds (default 10)"`
}

type watchedEvent struct {
	Seq  int64  `json:"seq" jsonschema:"the event's number in the game"`
	Name string `json:"name" jsonschema:"e.g. joined, game:rps:round:reveal, game:completed"`
	Data any    `json:"data" jsonschema:"the event's payload; joined carries the game state"`
}

type watchOutput struct {
	GameID    string         `json:"gameId"`
	Players   []userRef      `json:"players" jsonschema:"the game's players: the events name them by user id"`
	Events    []watchedEvent `json:"events"`
	Completed bool           `json:"completed" jsonschema:"the game ended during the watch"`
	Truncated bool           `json:"truncated" jsonschema:"more events came than are returned (at most 500)"`
}

// maxWatchedEvents bounds a watch's answer.
const maxWatchedEvents = 500

func (s *server) watchGame(ctx context.Context, _ *mcp.CallToolRequest, in watchInput) (*mcp.CallToolResult, watchOutput, error) {
	out := watchOutput{GameID: in.GameID, Players: []userRef{}, Events: []watchedEvent{}}
	if err := s.needWallet(); err != nil {
		return nil, out, err
	}
	if _, err := parseID("gameId", in.GameID); err != nil {
		return nil, out, err
	}
	seconds := in.Seconds
	if seconds == 0 {
		seconds = 10
	}
	if seconds < 1 || seconds > 60 {
		return nil, out, errors.New("VALIDATION_ERROR: seconds must be 1 to 60")
	}
	players, err := s.players(ctx, in.GameID)
	if err != nil {
		return nil, out, err
	}
	out.Players = players
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
	defer cancel()
	f, err := s.client.FollowGame(ctx, in.GameID)
	if err != nil {
		return nil, out, toolError(err)
	}
	for ev := range f.Events {
		if len(out.Events) == maxWatchedEvents {
			out.Truncated = true
			continue
		}
		var data any
		if len(ev.Data) > 0 {
			json.Unmarshal(ev.Data, &data)
		}
		out.Events = append(out.Events, watchedEvent{Seq: ev.Seq, Name: ev.Name, Data: data})
		if ev.Name == wager.EventCompleted {
			out.Completed = true
		}
	}
	if err := f.Err(); err != nil && len(out.Events) == 0 {
		return nil, out, toolError(err)
	}
	return nil, out, nil
}

type moveInput struct {
	GameID string `json:"gameId" jsonschema:"the game's id (a UUID)"`
	Move   any    `json:"move,omitempty" jsonschema:"the move: rps \"rock\", \"paper\" or \"scissors\"; connect4 {\"column\": 0-6}"`
	Resign bool   `json:"resign,omitempty" jsonschema:"true to resign the game instead of moving"`
}

func (s *server) submitMove(ctx context.Context, _ *mcp.CallToolRequest, in moveInput) (*mcp.CallToolResult, api.GameActResult, error) {
	if err := s.needWallet(); err != nil {
		return nil, api.GameActResult{}, err
	}
	id, err := parseID("gameId", in.GameID)
	if err != nil {
		return nil, api.GameActResult{}, err
	}
	action := map[string]any{"type": "move", "move": in.Move}
	switch {
	case in.Resign:
		action = map[string]any{"type": "resign"}
	case in.Move == nil:
		return nil, api.GameActResult{}, errors.New("VALIDATION_ERROR: give a move, or resign: true")
	}
	body, _ := json.Marshal(action)
	r, err := s.client.API.PostGamesByIdActionsWithBodyWithResponse(ctx, id, nil, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return nil, api.GameActResult{}, toolError(err)
	}
	if r.JSON200 == nil {
		return nil, api.GameActResult{}, fmt.Errorf("the service answered %d", r.StatusCode())
	}
	return nil, *r.JSON200, nil
}

type chatInput struct {
	GameID string `json:"gameId" jsonschema:"the game's id (a UUID)"`
	Text   string `json:"text" jsonschema:"the message, 1 to 500 characters"`
}

func (s *server) sendChatMessage(ctx context.Context, _ *mcp.CallToolRequest, in chatInput) (*mcp.CallToolResult, api.ChatMessage, error) {
	if err := s.needWallet(); err != nil {
		return nil, api.ChatMessage{}, err
	}
	id, err := parseID("gameId", in.GameID)
	if err != nil {
		return nil, api.ChatMessage{}, err
	}
	r, err := s.client.API.PostChatByTypeByIdMessagesWithResponse(ctx, "game", id, nil, api.ChatRequest{Text: in.Text})
	if err != nil {
		return nil, api.ChatMessage{}, toolError(err)
	}
	if r.JSON201 == nil {
		return nil, api.ChatMessage{}, fmt.Errorf("the service answered %d", r.StatusCode())
	}
	return nil, *r.JSON201, nil
}

type spendingView struct {
	MaxPerCallMinor    int64 `json:"maxPerCallMinor" jsonschema:"the most one call may spend"`
	MaxPerHourMinor    int64 `json:"maxPerHourMinor" jsonschema:"the most all calls may spend in a rolling hour"`
	SpentLastHourMinor int64 `json:"spentLastHourMinor" jsonschema:"committed in the last hour: donations, bets, buy orders, automatic payments, the stakes of games started, the stake of the queue you wait in and tournament entry fees not refunded"`
}

type balanceOutput struct {
	Balance  api.MoneyBalance `json:"balance" jsonschema:"platform balance (availableMinor, lockedMinor), wallet address, deposit address, on-chain USDC and SOL (onChain null when the chain did not answer in time)"`
	Spending spendingView     `json:"spending" jsonschema:"this server's spending cap"`
}

func (s *server) getBalance(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, balanceOutput, error) {
	if err := s.needWallet(); err != nil {
		return nil, balanceOutput{}, err
	}
	r, err := s.client.API.GetWalletsMeBalanceWithResponse(ctx, nil)
	if err != nil {
		return nil, balanceOutput{}, toolError(err)
	}
	if r.JSON200 == nil {
		return nil, balanceOutput{}, fmt.Errorf("the service answered %d", r.StatusCode())
	}
	return nil, balanceOutput{Balance: *r.JSON200, Spending: spendingView{MaxPerCallMinor: s.cap.PerCall,
		MaxPerHourMinor: s.cap.PerHour, SpentLastHourMinor: s.cap.SpentLastHour()}}, nil
}

type donateInput struct {
	GameID      string `json:"gameId" jsonschema:"the active game's id (a UUID)"`
	AmountMinor int64  `json:"amountMinor" jsonschema:"USDC minor units to give, at least 10000 (0.01 USDC)"`
}

// spend runs a money call within the spending cap: refused over it, the
// reservation given back when the API refused the call.
func spend[T any](s *server, what string, amount int64, call func() (*T, error)) (T, error) {
	var zero T
	if err := s.needWallet(); err != nil {
		return zero, err
	}
	release, err := s.reserve(what, amount)
	if err != nil {
		return zero, err
	}
	v, err := call()
	if err != nil {
		if refused(err) {
			release()
		}
		return zero, toolError(err)
	}
	return *v, nil
}

func (s *server) donate(ctx context.Context, _ *mcp.CallToolRequest, in donateInput) (*mcp.CallToolResult, api.PotDonationResult, error) {
	if _, err := parseID("gameId", in.GameID); err != nil {
		return nil, api.PotDonationResult{}, err
	}
	out, err := spend(s, "a donation", in.AmountMinor, func() (*api.PotDonationResult, error) {
		return s.client.Donate(ctx, in.GameID, in.AmountMinor)
	})
	return nil, out, err
}

type betInput struct {
	GameID      string `json:"gameId" jsonschema:"the active game's id (a UUID)"`
	OnUserID    string `json:"onUserId" jsonschema:"the player (user id) you bet will win"`
	AmountMinor int64  `json:"amountMinor" jsonschema:"USDC minor units to bet, at least 10000 (0.01 USDC)"`
}

func (s *server) placeBet(ctx context.Context, _ *mcp.CallToolRequest, in betInput) (*mcp.CallToolResult, api.PotBetResult, error) {
	if _, err := parseID("gameId", in.GameID); err != nil {
		return nil, api.PotBetResult{}, err
	}
	out, err := spend(s, "a bet", in.AmountMinor, func() (*api.PotBetResult, error) {
		return s.client.Bet(ctx, in.GameID, in.OnUserID, in.AmountMinor)
	})
	return nil, out, err
}

type orderInput struct {
	GameID      string `json:"gameId" jsonschema:"the active game's id (a UUID)"`
	Side        string `json:"side" jsonschema:"buy or sell"`
	OutcomeID   string `json:"outcomeId" jsonschema:"the player (user id) whose shares to trade"`
	PriceMinor  int64  `json:"priceMinor" jsonschema:"limit price per share in USDC minor units, a multiple of 10000 from 10000 to 990000"`
	Shares      int64  `json:"shares" jsonschema:"whole shares, 1 to 100000"`
	TimeInForce string `json:"timeInForce,omitempty" jsonschema:"GTC (default): the rest stays on the book; IOC: the rest is cancelled"`
}

func (s *server) placeMarketOrder(ctx context.Context, _ *mcp.CallToolRequest, in orderInput) (*mcp.CallToolResult, api.MarketPlaced, error) {
	id, err := parseID("gameId", in.GameID)
	if err != nil {
		return nil, api.MarketPlaced{}, err
	}
	if in.Side != "buy" && in.Side != "sell" {
		return nil, api.MarketPlaced{}, errors.New("VALIDATION_ERROR: side must be buy or sell")
	}
	body := api.MarketOrderRequest{OutcomeId: in.OutcomeID, PriceMinor: in.PriceMinor, Shares: in.Shares}
	if in.TimeInForce != "" {
		tif := api.MarketOrderRequestTimeInForce(in.TimeInForce)
		body.TimeInForce = &tif
	}
	var cost int64
	if in.Side == "buy" && in.PriceMinor > 0 && in.Shares > 0 {
		if in.PriceMinor > math.MaxInt64/in.Shares {
			return nil, api.MarketPlaced{}, errors.New("VALIDATION_ERROR: priceMinor x shares is too large")
		}
		cost = in.PriceMinor * in.Shares
	}
	out, err := spend(s, "a buy order", cost, func() (*api.MarketPlaced, error) {
		if in.Side == "buy" {
			r, err := s.client.API.PostGamesByIdMarketOrdersBuyWithResponse(ctx, id, nil, body)
			if err != nil {
				return nil, err
			}
			return answered(r.JSON201, r.StatusCode())
		}
		r, err := s.client.API.PostGamesByIdMarketOrdersSellWithResponse(ctx, id, nil, body)
		if err != nil {
			return nil, err
		}
		return answered(r.JSON201, r.StatusCode())
	})
	return nil, out, err
}

// answered checks that a successful answer had the expected body.
func answered[T any](v *T, status int) (*T, error) {
	if v == nil {
		return nil, fmt.Errorf("the service answered %d without a body", status)
	}
	return v, nil
}
