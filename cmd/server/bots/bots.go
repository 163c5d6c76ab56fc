// Package bots runs the demo players: they keep free rock-paper-scissors
// games going between themselves, so that a newcomer to a fresh install
// always finds something live to watch, and they play people: they accept
// free challenges and rematches, take the second seat of a person's free
// table nobody else takes, and play both game types at a human pace.
//
// They play as clients of the server's own HTTP API, through the Go SDK
// (wager.example.com/sdk), signed in with wallets derived from the platform's keys:
// every move, join, acceptance and read of a game is a request to the
// server's listener, so the SDK and the API are exercised as long as the
// server runs. Only what is not a player's business stays in-process: the
// bots' own scheduling queries (which people's tables have waited for a
// bot, which finished games wait for a bot's rematch; no API lists them),
// the isBot marking, and the choice of a bot for a person to play.
package bots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/chain"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/users"
)

// Pace of the bots.
const (
	// PeopleFirst is how long a person's free table waits for another
	// person before a bot takes the seat.
	PeopleFirst = 10 * time.Second
	// RematchWindow is how long after a game a bot still accepts a
	// rematch.
	RematchWindow = 5 * time.Minute
	// AfterPeople is how long a bot that played a person stays out of the
	// bots' own games, free for the rematch.
	AfterPeople = 30 * time.Second
)

// AppID is the X-App-Id of the bots' requests.
const AppID = "demo-bots"

// Bots runs the demo players.
type Bots struct {
	db    *bun.DB
	games *game.Service // the bots' scheduling queries only
	keys  *chain.Keys
	now   domain.Clock
	log   *slog.Logger
	count int

	mu      sync.Mutex
	baseURL string          // the API the bots play through; "" until Connect
	known   map[string]bool // the user ids of the bots signed in, for IsBot

	http       *http.Client         // the bots' connections to the API
	players    []player             // signed in and marked as bots
	lobbyID    uuid.UUID            // the bots' own lobby; zero until opened
	thinkAt    map[string]time.Time // per bot: when to move on its current turn
	withPerson map[string]time.Time // per bot: when it last played a person
	resumeAt   time.Time            // when to carry on after a 429 or 503

	arena arenaState // the demo arena (arena.go)
}

// player is one bot: its user id and its client of the API.
type player struct {
	id  string
	api *wager.Client
}

// New returns count demo players whose wallets derive from keys. They
// play once Connect has told them where the API is.
func New(bdb *bun.DB, games *game.Service, keys *chain.Keys, now domain.Clock, log *slog.Logger, count int) *Bots {
	return &Bots{db: bdb, games: games, keys: keys, now: now, log: log, count: count, known: map[string]bool{},
		thinkAt: map[string]time.Time{}, withPerson: map[string]time.Time{}}
}

// Wallet returns the wallet of the demo bot number i (from 0).
func Wallet(keys *chain.Keys, i int) solana.PrivateKey {
	return keys.Derive(fmt.Sprintf("demo-bot-%d", i))
}

// Wallets returns the addresses of count demo bots' wallets.
func Wallets(keys *chain.Keys, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = Wallet(keys, i).PublicKey().String()
	}
	return out
}

// Connect tells the bots the base URL of the server's own API (e.g.
// http://127.0.0.1:8080), which they play through from their next tick.
// It returns an error when the URL is not an absolute http(s) URL.
func (b *Bots) Connect(baseURL string) error {
	if _, err := wager.New(baseURL); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.baseURL = baseURL
	return nil
}

// IsBot reports whether userID is one of these demo bots (once it signed
// in): the server does not hold them to the limits meant for outsiders.
func (b *Bots) IsBot(userID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.known[userID]
}

// Run plays until ctx is done.
func (b *Bots) Run(ctx context.Context) {
	domain.Every(ctx, 500*time.Millisecond, b.log, "demo bots", b.Tick)
}

// Tick does one round of the bots' work: sign them in and open their
// lobby on first use, move in their games after a human-looking pause,
// answer people (challenges, rematches, tables), and queue the idle ones
// for a game among themselves. With three bots or more, one or two (to
// keep the others even) stay out of the bots' own games, free for people
// at once. Before Connect it does nothing.
func (b *Bots) Tick(ctx context.Context) error {
	if b.now().Before(b.resumeAt) {
		return nil
	}
	if err := b.setUp(ctx); err != nil {
		return b.wait(err)
	}
	if err := b.arenaTick(ctx); err != nil {
		return b.wait(err)
	}
	for i, p := range b.players {
		if err := b.tick(ctx, i, p); err != nil {
			return b.wait(err)
		}
	}
	return nil
}

// tick does one bot's work.
func (b *Bots) tick(ctx context.Context, i int, p player) error {
	cg, err := p.api.API.GetUsersMeCurrentGameWithResponse(ctx, nil)
	if err != nil {
		return err
	}
	if cg.JSON200 != nil {
		return b.play(ctx, p, cg.JSON200.GameId)
	}
	if answered, err := b.answerPeople(ctx, p); err != nil || answered {
		return err
	}
	if b.count >= 3 && i >= (b.count-1)&^1 {
		return nil // on call for people
	}
	if b.now().Sub(b.withPerson[p.id]) < AfterPeople {
		return nil // free for a rematch
	}
	if b.inArena(i) {
		return b.leaveQueue(ctx, p) // the arena pairs it
	}
	// Joining the queue it waits in already answers "queued" again.
	_, err = p.api.API.PostLobbiesByIdJoinQueueWithResponse(ctx, b.lobbyID.String(), nil)
	if status(err) == http.StatusConflict || refusedByProtection(err) {
		return nil
	}
	return err
}

// refusedByProtection reports a refusal of player protection. Bots set no
// limits, but the operator's rules (an age to confirm, a region) hold for
// them as for anyone: a refused bot leaves that game alone instead of
// asking again and again.
func refusedByProtection(err error) bool {
	var limit *wager.LimitExceededError
	var excluded *wager.SelfExcludedError
	var age *wager.AgeUnconfirmedError
	var region *wager.RegionRestrictedError
	return errors.As(err, &limit) || errors.As(err, &excluded) || errors.As(err, &age) || errors.As(err, &region)
}

// answerPeople has an idle bot accept a person's free challenge (and
// decline a staked one: bots hold no money), accept a rematch it was asked
// for, or take the second seat of a person's free table. It reports whether
// the bot took a game.
func (b *Bots) answerPeople(ctx context.Context, p player) (bool, error) {
	list, err := p.api.API.GetChallengesWithResponse(ctx, nil)
	if err != nil {
		return false, err
	}
	var challenges []api.GameChallenge
	if list.JSON200 != nil {
		challenges = *list.JSON200
	}
	for _, c := range challenges {
		id, err := uuid.Parse(c.Id)
		if c.ToUserId != p.id || err != nil {
			continue
		}
		if c.StakeMinor == 0 {
			if err := b.leaveQueue(ctx, p); err != nil {
				return false, err
			}
			_, err := p.api.API.PostChallengesByIdAcceptWithResponse(ctx, id.String(), nil)
			if err == nil {
				return true, nil
			}
			if !b.settled(err, "accept a challenge") {
				return false, err
			}
		}
		// Staked (bots hold no money), or the challenger is busy: declined.
		if _, err := p.api.API.PostChallengesByIdDeclineWithResponse(ctx, id.String(), nil); err != nil && !b.settled(err, "decline a challenge") {
			return false, err
		}
	}
	// Which finished games wait for this bot's rematch is a scheduling
	// query: no API lists the rematches asked of a user.
	rematches, err := b.games.RematchesAsked(ctx, p.id, b.now().Add(-RematchWindow))
	if err != nil {
		return false, err
	}
	for _, gameID := range rematches {
		id, err := uuid.Parse(gameID)
		if err != nil {
			return false, fmt.Errorf("a rematch asked of a demo bot: game %q: %w", gameID, err)
		}
		if err := b.leaveQueue(ctx, p); err != nil {
			return false, err
		}
		switch _, err := p.api.API.PostGamesByIdRematchWithResponse(ctx, id.String(), nil); {
		case err == nil:
			return true, nil
		case !b.settled(err, "accept a rematch"):
			return false, err
		}
	}
	// Which people's tables have waited long enough for a bot is the
	// bots' own scheduling query: the API does not say who waits where,
	// or since when, or whether they are people.
	tables, err := b.games.PeoplesFreeTables(ctx, b.now().Add(-PeopleFirst))
	if err != nil || len(tables) == 0 {
		return false, err
	}
	table, err := uuid.Parse(tables[0])
	if err != nil {
		return false, fmt.Errorf("a person's table %q: %w", tables[0], err)
	}
	if err := b.leaveQueue(ctx, p); err != nil {
		return false, err
	}
	if _, err := p.api.API.PostLobbiesByIdJoinQueueWithResponse(ctx, table.String(), nil); err != nil && !b.settled(err, "take a table") {
		return false, err
	}
	return true, nil
}

// settled reports an error that only says someone was quicker (the
// challenge or table was taken, the person left, the game moved on), or
// that player protection refuses it: nothing to do but note it.
func (b *Bots) settled(err error, what string) bool {
	if refusedByProtection(err) {
		b.log.Debug("demo bot: "+what+": refused by player protection", "err", err)
		return true
	}
	switch status(err) {
	case http.StatusConflict, http.StatusNotFound:
		b.log.Debug("demo bot: "+what+": settled meanwhile", "err", err)
		return true
	}
	return false
}

// status is the HTTP status of an error answer of the API (0 for other
// errors).
func status(err error) int {
	var ae *wager.APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// wait turns an answer that only says the server is busy or in
// maintenance (429, 503) into a pause for as long as its Retry-After
// says (at least a second), noted at debug level: the bots carry on
// afterwards. A 426 (MIN_SDK_VERSION above the SDK's version) it returns
// once a minute. Other errors it returns.
func (b *Bots) wait(err error) error {
	var up *wager.UpgradeRequiredError
	if errors.As(err, &up) {
		b.resumeAt = b.now().Add(time.Minute)
		return err
	}
	var ae *wager.APIError
	if !errors.As(err, &ae) || (ae.Status != http.StatusTooManyRequests && ae.Status != http.StatusServiceUnavailable) {
		return err
	}
	b.resumeAt = b.now().Add(max(ae.RetryAfter, time.Second))
	b.log.Debug("demo bots wait", "until", b.resumeAt, "err", err)
	return nil
}

func (b *Bots) leaveQueue(ctx context.Context, p player) error {
	_, err := p.api.API.DeleteLobbiesByIdJoinQueueWithResponse(ctx, b.lobbyID.String(), nil)
	if status(err) == http.StatusNotFound {
		return nil
	}
	return err
}

// view is what a bot reads of a game's state (GET /games/:id/state), for
// both game types.
type view struct {
	GameType  string          `json:"gameType"`
	Players   []string        `json:"players"`
	Submitted map[string]bool `json:"submitted"` // rps
	Turn      *string         `json:"turn"`      // connect4
	Board     [][]string      `json:"board"`     // connect4
}

// play moves for a bot when it is its turn, after a pause of one to five
// seconds (one to three in Connect Four).
func (b *Bots) play(ctx context.Context, p player, gameID string) error {
	id, err := uuid.Parse(gameID)
	if err != nil {
		return fmt.Errorf("demo bot's current game %q: %w", gameID, err)
	}
	r, err := p.api.API.GetGamesByIdStateWithResponse(ctx, id.String(), nil)
	if err != nil {
		if b.settled(err, "read a game") { // the game just ended
			return nil
		}
		return err
	}
	var st view
	if err := json.Unmarshal(r.Body, &st); err != nil {
		return fmt.Errorf("read the state of game %s: %w", gameID, err)
	}
	for _, who := range st.Players {
		if !b.isPlayer(who) {
			b.withPerson[p.id] = b.now()
		}
	}
	var move any
	pause := 1000 + rand.IntN(4000)
	switch st.GameType {
	case "rps":
		if st.Submitted[p.id] {
			delete(b.thinkAt, p.id)
			return nil
		}
		move = []string{"rock", "paper", "scissors"}[rand.IntN(3)]
	case "connect4":
		if st.Turn == nil || *st.Turn != p.id || len(st.Board) == 0 {
			delete(b.thinkAt, p.id)
			return nil
		}
		move = map[string]int{"column": ConnectFourColumn(st.Board, p.id)}
		pause = 1000 + rand.IntN(2000)
	default:
		return nil
	}
	at, ok := b.thinkAt[p.id]
	if !ok {
		b.thinkAt[p.id] = b.now().Add(time.Duration(pause) * time.Millisecond)
		return nil
	}
	if b.now().Before(at) {
		return nil
	}
	delete(b.thinkAt, p.id)
	body, err := wager.MoveOf(move)
	if err != nil {
		return err
	}
	_, err = p.api.API.PostGamesByIdActionsWithResponse(ctx, id.String(), nil, api.GameAction{Type: "move", Move: body})
	if s := status(err); s >= 400 && s < 500 {
		// Raced with a timeout or the end of the game.
		b.log.Debug("demo bot's move refused", "game", gameID, "err", err)
		return nil
	}
	return err
}

func (b *Bots) isPlayer(userID string) bool {
	return slices.ContainsFunc(b.players, func(p player) bool { return p.id == userID })
}

// Opponent returns a bot for a person to play: an idle one if there is one
// (it accepts at once), else one waiting for a game among the bots, else
// one that will accept when its game ends. It is the server's choice, not
// a bot's action, so it reads the database.
func (b *Bots) Opponent(ctx context.Context) (users.User, error) {
	var u users.User
	err := b.db.NewSelect().Model(&u).ModelTableExpr("users AS u").ColumnExpr("u.*").
		Join("LEFT JOIN user_presence AS p ON p.user_id = u.id").
		Where("u.bot").OrderExpr("CASE WHEN p.kind IS NULL THEN 0 WHEN p.kind = 'queue' THEN 1 ELSE 2 END, random()").
		Limit(1).Scan(ctx)
	if err != nil {
		return u, fmt.Errorf("find a demo bot: %w", err)
	}
	return u, nil
}

// setUp signs the bots in through the API (the wallet login makes their
// users), marks them as bots and opens their lobby, once Connect has given
// the API's address.
func (b *Bots) setUp(ctx context.Context) error {
	b.mu.Lock()
	baseURL := b.baseURL
	b.mu.Unlock()
	if baseURL == "" || (len(b.players) == b.count && b.lobbyID != uuid.Nil) {
		return nil
	}
	if b.http == nil {
		// One connection pool for all of them; a request gives up after 30 s.
		b.http = &http.Client{Timeout: 30 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	for i := len(b.players); i < b.count; i++ {
		c, err := wager.New(baseURL, wager.WithWallet(Wallet(b.keys, i)), wager.WithAppID(AppID), wager.WithHTTPClient(b.http))
		if err != nil {
			return err
		}
		if err := c.SignIn(ctx); err != nil {
			return fmt.Errorf("sign in demo bot %d: %w", i+1, err)
		}
		if err := b.mark(ctx, i, c.UserID()); err != nil {
			return err
		}
		b.players = append(b.players, player{id: c.UserID(), api: c})
	}
	l, err := b.players[0].api.API.PostLobbiesWithResponse(ctx, nil, api.LobbyRequest{GameType: "rps",
		Settings: wager.Settings(map[string]any{"rounds": 3, "roundSeconds": 10})})
	if err != nil {
		return fmt.Errorf("open the demo bots' lobby: %w", err)
	}
	if l.JSON201 == nil {
		return fmt.Errorf("open the demo bots' lobby: answered %d", l.StatusCode())
	}
	if b.lobbyID, err = uuid.Parse(l.JSON201.Id); err != nil {
		return fmt.Errorf("the demo bots' lobby %q: %w", l.JSON201.Id, err)
	}
	return nil
}

// mark marks user userID as demo bot number i: spectators see that it is a
// bot, and it stays off the leaderboards. Only the server may mark a bot,
// so this is no API call.
func (b *Bots) mark(ctx context.Context, i int, userID string) error {
	name := fmt.Sprintf("demo_bot_%d", i+1)
	_, err := b.db.ExecContext(ctx, `UPDATE users SET bot = true, bot_account = true,
		username = CASE WHEN bot OR EXISTS (SELECT 1 FROM users WHERE username = ?) THEN username ELSE ? END,
		display_name = CASE WHEN bot THEN display_name ELSE ? END
		WHERE id = ?`, name, name, fmt.Sprintf("Demo bot %d", i+1), userID)
	if err != nil {
		return fmt.Errorf("mark demo bot %d: %w", i+1, err)
	}
	b.mu.Lock()
	b.known[userID] = true
	b.mu.Unlock()
	return nil
}
