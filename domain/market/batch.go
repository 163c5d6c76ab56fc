package market

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/market/engine"
	"wager/domain/money"
)

// maxBatch is the most orders one transaction takes, and maxMarkets the
// most markets taking orders at once on an instance: each holds a
// connection for its transaction, and the others wait their turn in the
// queue, not for a connection that moves need too.
const (
	maxBatch   = 64
	maxMarkets = 8
)

// batchTimeout bounds one batch's transaction, which no caller's
// cancellation ends.
const batchTimeout = 30 * time.Second

// An order waiting to be taken. Orders for one market are serialised by
// the market's lock anyway, so the instance takes the ones that arrive
// while a transaction runs together in the next one (see db.Batcher): a
// market's throughput is then orders per commit, not one order per
// commit and its round trips. Each order is still matched on its own, in
// arrival order, and answered with its own result.
type pending struct {
	gameID string
	userID string
	side   engine.Side
	req    OrderRequest
}

// newOrders returns the instance's batcher of orders: one market's orders
// in a transaction.
func newOrders(s *Service) *db.Batcher[string, pending, Placed] {
	return db.NewBatcher[string](db.Batching{What: "take the orders of a market", Size: maxBatch, Writers: maxMarkets,
		Timeout: batchTimeout, OneKey: true}, s.placeAll)
}

// Place takes a buy or sell order of userID into the market of gameID:
// it locks what the order needs, matches it (see package engine) and
// writes everything it changed in one transaction, shared with the orders
// for the same market that arrive meanwhile. Errors: NOT_FOUND,
// VALIDATION_ERROR, FORBIDDEN (a player of the game), GAME_NOT_ACTIVE,
// INSUFFICIENT_FUNDS (a buy) or INSUFFICIENT_SHARES (a sell), player
// protection's refusals of a buy (see Protection); ctx.Err() when ctx
// ends first, and the order may still be taken.
func (s *Service) Place(ctx context.Context, userID, gameID string, side engine.Side, req OrderRequest) (Placed, error) {
	gameID, ok := domain.CanonicalID(gameID)
	if !ok {
		return Placed{}, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	// The region is this request's: the batch runs in another's.
	if side == engine.Buy && s.protect != nil {
		if err := s.protect.CheckRegion(ctx); err != nil {
			return Placed{}, err
		}
	}
	return s.orders.Do(ctx, gameID, pending{gameID: gameID, userID: userID, side: side, req: req})
}

// placeAll runs a batch of orders for one market in one transaction and
// returns each order's result. An order refused for its own reasons (a
// player's, an invalid one, one the balance or the shares do not cover)
// changes nothing and does not hold up the others.
func (s *Service) placeAll(ctx context.Context, batch []pending) []db.Result[Placed] {
	var results []db.Result[Placed]
	gameID := batch[0].gameID
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		var err error
		results, err = s.placeBatch(ctx, tx, gameID, batch)
		return err
	})
	if errors.Is(err, errRefusedAll) {
		return results
	}
	if err != nil {
		results = make([]db.Result[Placed], len(batch))
		for i := range results {
			results[i].Err = err
		}
	}
	return results
}

// errRefusedAll rolls back a batch whose every order was refused: nothing
// of it may stay, not even the market row its lock created.
var errRefusedAll = errors.New("every order of the batch was refused")

// taken is an order of the batch as the engine and the writes see it.
type taken struct {
	i     int
	order Order
	eng   engine.Order
	tif   engine.TIF
}

// batchRun is a batch of orders on its way through its transaction: what
// each step reads for the next ones, and what matching leaves to write.
type batchRun struct {
	gameID  string
	batch   []pending
	results []db.Result[Placed]
	m       marketRow
	now     time.Time
	// open: the game is staked and active and its market open.
	open bool
	// linked are the refusals of the batch's traders linked to a player.
	linked map[string]*domain.Error
	// orders are the batch's orders that passed validation, in arrival order.
	orders []*taken
	// book holds the resting orders that the batch crosses, and resting
	// their rows by seq.
	book    *engine.Book
	resting map[int64]Order
	// users are the batch's traders; owners, they and the resting orders'.
	users, owners []string
	fx            *effects
	refusal       func(userID string, lost, atRisk int64) *domain.Error
	available     map[string]int64
	lost          map[string]int64 // what the batch's orders so far moved out of each trader's balance
	makers        map[int64]int64  // a resting order's seq -> shares filled
	byEngineID    map[int64]*taken // the batch's orders resting since their matching
	trades        []Trade
	traders       []string // everyone who traded, takers and makers
}

// placeBatch takes a batch of orders for the market of gameID in tx: it
// locks the game and the market, refuses the orders that may not trade,
// loads what they cross and locks the balances they may move, matches
// them one by one in arrival order, and writes what they changed. It
// returns each order's result, with errRefusedAll when none was taken.
func (s *Service) placeBatch(ctx context.Context, tx db.Tx, gameID string, batch []pending) ([]db.Result[Placed], error) {
	results := make([]db.Result[Placed], len(batch))
	g, m, err := s.lock(ctx, tx, gameID)
	var de *domain.Error
	if errors.As(err, &de) {
		for i := range results {
			results[i].Err = err
		}
		return results, errRefusedAll
	}
	if err != nil {
		return nil, err
	}
	b := &batchRun{gameID: gameID, batch: batch, results: results, m: m, now: s.now(),
		open: g.Stake > 0 && g.Status == game.StatusActive && m.Status == StatusOpen}
	if err := s.readLinks(ctx, tx, b); err != nil {
		return nil, err
	}
	b.validate(g)
	if len(b.orders) == 0 {
		return results, errRefusedAll
	}
	if err := s.loadBook(ctx, tx, b); err != nil {
		return nil, err
	}
	if err := s.lockBalances(ctx, tx, b); err != nil {
		return nil, err
	}
	if b.open {
		if err := s.cancelLinked(ctx, tx, b.m, batch, b.linked, b.book, b.resting, b.fx, b.now); err != nil {
			return nil, err
		}
	}
	if err := b.matchAll(); err != nil {
		return nil, err
	}
	return s.record(ctx, tx, b)
}

// readLinks reads, while the market trades, which of the batch's traders
// are linked to one of the game's players.
func (s *Service) readLinks(ctx context.Context, tx db.Tx, b *batchRun) error {
	if !b.open {
		return nil
	}
	var traders []string
	for _, p := range b.batch {
		if !slices.Contains(traders, p.userID) && !slices.Contains(b.m.Outcomes, p.userID) {
			traders = append(traders, p.userID)
		}
	}
	var err error
	b.linked, err = s.links.LinkRefusals(ctx, tx, traders, b.m.Outcomes)
	return err
}

// validate refuses the orders that may not trade (invalid ones, a free
// game's, a player's, a linked trader's, any while the market does not
// trade) and makes the others the orders to match.
func (b *batchRun) validate(g lockedGame) {
	for i, p := range b.batch {
		tif, err := p.req.validate(b.m.Outcomes)
		switch {
		case g.Stake == 0:
			err = game.ErrFreeGame
		case slices.Contains(b.m.Outcomes, p.userID):
			err = domain.Errorf(domain.CodeForbidden, "players of a game may not trade its market")
		case !b.open:
			err = domain.Errorf(domain.CodeGameNotActive, "the market trades while the game is active")
		case b.linked[p.userID] != nil:
			err = b.linked[p.userID]
		}
		if err != nil {
			b.results[i].Err = err
			continue
		}
		o := Order{ID: uuid.NewString(), GameID: b.gameID, UserID: p.userID, Side: p.side.String(), OutcomeID: p.req.OutcomeID,
			PriceMinor: p.req.PriceMinor, Shares: p.req.Shares, TimeInForce: "GTC", Status: OrderOpen, CreatedAt: b.now, UpdatedAt: b.now}
		if tif == engine.IOC {
			o.TimeInForce = "IOC"
		}
		// The batch's orders come after every resting one, in arrival order.
		e := engine.Order{ID: batchIDs + int64(i), Owner: p.userID, Side: p.side, Outcome: b.m.outcome(p.req.OutcomeID),
			Price: p.req.PriceMinor, Shares: p.req.Shares}
		b.orders = append(b.orders, &taken{i: i, order: o, eng: e, tif: tif})
	}
}

// loadBook loads the resting orders that the batch crosses into a book,
// and the holdings of everyone whose orders may trade.
func (s *Service) loadBook(ctx context.Context, tx db.Tx, b *batchRun) error {
	engs := make([]engine.Order, len(b.orders))
	for i, o := range b.orders {
		engs[i] = o.eng
	}
	var err error
	if b.book, b.resting, err = s.crossing(ctx, tx, b.gameID, b.m, engs); err != nil {
		return err
	}
	b.users = []string{}
	for _, o := range b.orders {
		if !slices.Contains(b.users, o.eng.Owner) {
			b.users = append(b.users, o.eng.Owner)
		}
	}
	b.owners = slices.Clone(b.users)
	for _, r := range b.resting {
		if !slices.Contains(b.owners, r.UserID) {
			b.owners = append(b.owners, r.UserID)
		}
	}
	holdings, err := s.holdings(ctx, tx, b.gameID, b.m, b.owners)
	if err != nil {
		return err
	}
	b.fx = newEffects(b.gameID, "", holdings)
	return nil
}

// lockBalances takes the buyers' protection locks, then every balance the
// batch may move, in one order: the lock order of every path that puts
// money in (db/doc.go). An exclusion that cancels a buyer's orders has
// committed, or waits for this batch and then cancels its orders too.
func (s *Service) lockBalances(ctx context.Context, tx db.Tx, b *batchRun) error {
	var err error
	if b.refusal, err = s.buyRefusals(ctx, tx, b.orders); err != nil {
		return err
	}
	if b.available, err = availableOf(ctx, tx, b.owners); err != nil {
		return err
	}
	b.lost = map[string]int64{}
	return nil
}

// matchAll matches the batch's orders one by one, in arrival order,
// against the book and the orders of the batch that rest before them.
func (b *batchRun) matchAll() error {
	b.makers = map[int64]int64{}
	b.byEngineID = map[int64]*taken{}
	b.traders = []string{}
	for _, o := range b.orders {
		if err := b.match(o); err != nil {
			return err
		}
	}
	if !b.fx.valid() {
		return fmt.Errorf("orders in the market of game %s would leave a position negative", b.gameID)
	}
	return nil
}

// match matches one order, or refuses it (player protection, the balance,
// the shares, the market's cap) leaving everything as it was, and sets its
// result.
func (b *batchRun) match(o *taken) error {
	e := o.eng
	if e.Side == engine.Buy && b.refusal != nil {
		if r := b.refusal(e.Owner, b.lost[e.Owner], e.Price*e.Shares); r != nil {
			b.results[o.i].Err = r
			return nil
		}
	}
	if e.Side == engine.Buy && b.available[e.Owner] < e.Price*e.Shares {
		b.results[o.i].Err = domain.Errorf(domain.CodeInsufficientFunds, "the balance does not cover this order")
		return nil
	}
	b.fx.orderID = o.order.ID
	from := len(b.fx.postings)
	var res engine.Result
	var err error
	if e.Side == engine.Buy {
		// A buy may mint pairs: it is matched on a copy of the book, and
		// refused whole when the market would pass its cap.
		trial := b.book.Clone()
		if res, err = trial.Place(e, o.tif); err != nil {
			return fmt.Errorf("match an order in the market of game %s: %w", b.gameID, err)
		}
		if minted := mintedBy(res); b.m.Pairs+minted > b.m.MaxPairs {
			b.results[o.i].Err = marketCapError(b.m.MaxPairs, b.m.Pairs, minted)
			return nil
		}
		b.book = trial
		b.fx.lock(e)
	} else {
		if !b.fx.lock(e) {
			b.results[o.i].Err = domain.Errorf(domain.CodeInsufficientShares, "you hold fewer unlocked shares of that player than the order sells")
			return nil
		}
		if res, err = b.book.Place(e, o.tif); err != nil {
			return fmt.Errorf("match an order in the market of game %s: %w", b.gameID, err)
		}
	}
	placed := Placed{Trades: b.fill(o, res)}
	o.order.FilledShares = res.Filled
	switch {
	case res.Filled == e.Shares:
		o.order.Status = OrderFilled
	case !res.Rested:
		o.order.Status = OrderCancelled
		b.fx.release(e, e.Shares-res.Filled, "market-release:"+o.order.ID)
	default:
		b.byEngineID[e.ID] = o
	}
	// The answer is the order as its own matching left it: later orders
	// of the batch that fill it are its trades, not this answer's.
	placed.Order = o.order
	b.count(b.fx.postings[from:])
	b.results[o.i].Value = placed
	return nil
}

// fill books the fills of an order's matching: the effects, the makers'
// filled shares, the trades and the market's prices. It returns the
// fills as the order's answer shows them.
func (b *batchRun) fill(o *taken, res engine.Result) []Fill {
	e := o.eng
	fills := make([]Fill, len(res.Fills))
	for n, f := range res.Fills {
		b.fx.fill(e, f, n)
		maker := b.resting[f.Maker.ID].ID
		if r := b.byEngineID[f.Maker.ID]; r != nil { // an order of this batch, resting since
			maker = r.order.ID
			r.order.FilledShares += f.Shares
			if r.order.FilledShares == r.order.Shares {
				r.order.Status = OrderFilled
			}
		} else {
			b.makers[b.resting[f.Maker.ID].Seq] += f.Shares
		}
		b.trades = append(b.trades, Trade{GameID: b.gameID, Kind: f.Kind.String(), OutcomeID: o.order.OutcomeID, PriceMinor: f.TakerPrice,
			Shares: f.Shares, MakerOrderID: maker, TakerOrderID: o.order.ID, CreatedAt: b.now})
		fills[n] = Fill{PriceMinor: f.TakerPrice, Shares: f.Shares}
		b.m.traded(o.order.OutcomeID, f.TakerPrice, f.Shares, f.Kind)
		for _, u := range []string{e.Owner, f.Maker.Owner} {
			if !slices.Contains(b.traders, u) {
				b.traders = append(b.traders, u)
			}
		}
	}
	return fills
}

// count makes what an order moved (its postings) count for the next
// orders' balance checks, and as play money (every kind the market posts)
// for their protection's.
func (b *batchRun) count(postings []money.Posting) {
	for _, p := range postings {
		for _, en := range p.Entries {
			for _, u := range b.users {
				if en.Account == money.Available(u) {
					b.available[u] += en.Amount
					b.lost[u] -= en.Amount
				}
			}
		}
	}
}

// record writes what the batch changed: its orders taken, the trades and
// the makers' fills, the effects on balances and holdings, the traders'
// achievement; then it announces the market. It returns errRefusedAll
// when every order was refused.
func (s *Service) record(ctx context.Context, tx db.Tx, b *batchRun) ([]db.Result[Placed], error) {
	var rows []*Order
	for _, o := range b.orders {
		if b.results[o.i].Err == nil {
			rows = append(rows, &o.order)
		}
	}
	if len(rows) == 0 {
		return b.results, errRefusedAll
	}
	if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return nil, fmt.Errorf("record %d orders in the market of game %s: %w", len(rows), b.gameID, err)
	}
	if len(b.trades) > 0 {
		if _, err := tx.NewInsert().Model(&b.trades).Exec(ctx); err != nil {
			return nil, fmt.Errorf("record %d trades in the market of game %s: %w", len(b.trades), b.gameID, err)
		}
		if len(b.makers) > 0 {
			if err := fillMakers(ctx, tx, b.makers, b.now); err != nil {
				return nil, err
			}
		}
	}
	if err := s.write(ctx, tx, b.gameID, b.m, b.fx); err != nil {
		return nil, err
	}
	if s.achievements != nil && len(b.traders) > 0 {
		if err := s.achievements.UnlockEach(ctx, tx, b.traders, AchievementTrader); err != nil {
			return nil, err
		}
	}
	var last *Trade
	if len(b.trades) > 0 {
		last = &b.trades[len(b.trades)-1]
	}
	if err := s.announce(ctx, tx, b.gameID, b.m, last); err != nil {
		return nil, err
	}
	return b.results, nil
}

// cancelLinked cancels the resting orders that the batch crosses whose
// owners are linked to one of the game's players (a link made since they
// were placed: a tip, a transfer), instead of letting them trade: their
// locks are given back (fx) and they leave the book. linked holds the
// links of the batch's traders, read already; the other owners' are read
// in one statement.
func (s *Service) cancelLinked(ctx context.Context, tx db.Tx, m marketRow, batch []pending, linked map[string]*domain.Error,
	book *engine.Book, resting map[int64]Order, fx *effects, now time.Time) error {
	var others []string
	for _, r := range resting {
		inBatch := slices.ContainsFunc(batch, func(p pending) bool { return p.userID == r.UserID })
		if !inBatch && !slices.Contains(others, r.UserID) {
			others = append(others, r.UserID)
		}
	}
	if len(others) > 0 {
		more, err := s.links.LinkRefusals(ctx, tx, others, m.Outcomes)
		if err != nil {
			return err
		}
		linked = maps.Clone(linked)
		maps.Copy(linked, more)
	}
	var ids []string
	for _, seq := range slices.Sorted(maps.Keys(resting)) {
		r := resting[seq]
		if linked[r.UserID] == nil {
			continue
		}
		book.Cancel(seq)
		fx.release(r.engineOrder(m), r.Shares-r.FilledShares, "market-cancel:"+r.ID)
		delete(resting, seq)
		ids = append(ids, r.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.NewUpdate().Model((*Order)(nil)).Set("status = ?", OrderCancelled).Set("updated_at = ?", now).
		Where("id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
		return fmt.Errorf("cancel %d orders of traders linked to a player: %w", len(ids), err)
	}
	return nil
}

// buyRefusals asks player protection about the buyers of orders, in one
// statement (none, and a nil rule, when no order buys).
func (s *Service) buyRefusals(ctx context.Context, tx db.Tx, orders []*taken) (func(userID string, lost, atRisk int64) *domain.Error, error) {
	var buyers []string
	for _, o := range orders {
		if o.eng.Side == engine.Buy && !slices.Contains(buyers, o.eng.Owner) {
			buyers = append(buyers, o.eng.Owner)
		}
	}
	if len(buyers) == 0 || s.protect == nil {
		return nil, nil
	}
	return s.protect.BuyRefusals(ctx, tx, buyers)
}

// mintedBy is how many pairs an order's fills minted.
func mintedBy(r engine.Result) int64 {
	var n int64
	for _, f := range r.Fills {
		if f.Kind == engine.Mint {
			n += f.Shares
		}
	}
	return n
}

// marketCapError is the LIMIT_EXCEEDED refusal of an order that would mint
// minted pairs in a market with pairs outstanding of at most maxPairs.
func marketCapError(maxPairs, pairs, minted int64) *domain.Error {
	return domain.Errorf(domain.CodeLimitExceeded,
		"this game's market may have at most %d pairs of shares outstanding (in proportion to the players' stakes); %d are, and this order would create %d more, so none of it was placed",
		maxPairs, pairs, minted).With("limit", "market").With("limitPairs", maxPairs).With("usedPairs", pairs)
}

// batchIDs is where the engine ids of a batch's orders start: after any
// resting order's seq.
const batchIDs = int64(1) << 62

// crossing loads into a book the resting orders that any of orders can
// cross (a buy of X at q: sells of X at q or less and buys of the other
// outcome at One-q or more; a sell the other way round), and returns the
// loaded orders by seq.
func (s *Service) crossing(ctx context.Context, tx db.Tx, gameID string, m marketRow, orders []engine.Order) (*engine.Book, map[int64]Order, error) {
	// Per outcome: the highest sell price and the lowest buy price that any
	// order crosses (0 and above One: none).
	sellsUpTo, buysFrom := [2]int64{}, [2]int64{engine.One + 1, engine.One + 1}
	for _, o := range orders {
		x, y := o.Outcome, 1-o.Outcome
		if o.Side == engine.Buy {
			sellsUpTo[x] = max(sellsUpTo[x], o.Price)
			buysFrom[y] = min(buysFrom[y], engine.One-o.Price)
		} else {
			buysFrom[x] = min(buysFrom[x], o.Price)
			sellsUpTo[y] = max(sellsUpTo[y], engine.One-o.Price)
		}
	}
	var rows []Order
	if err := tx.NewSelect().Model(&rows).Column("id", "seq", "user_id", "side", "outcome_id", "price_minor", "shares", "filled_shares").
		Where("game_id = ? AND status = 'open'", gameID).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			for i, outcome := range m.Outcomes {
				q = q.WhereOr("side = 'sell' AND outcome_id = ? AND price_minor <= ?", outcome, sellsUpTo[i]).
					WhereOr("side = 'buy' AND outcome_id = ? AND price_minor >= ?", outcome, buysFrom[i])
			}
			return q
		}).Order("seq").Scan(ctx); err != nil {
		return nil, nil, fmt.Errorf("load the orders new orders cross in the market of game %s: %w", gameID, err)
	}
	book, bySeq := engine.New(), make(map[int64]Order, len(rows))
	for _, r := range rows {
		if err := book.Rest(r.engineOrder(m)); err != nil {
			return nil, nil, fmt.Errorf("load order %s of the market of game %s: %w", r.ID, gameID, err)
		}
		bySeq[r.Seq] = r
	}
	return book, bySeq, nil
}

// availableOf reads the available balances of users, locking them in the
// order of their ids for the transaction: the orders' checks against them
// hold until the commit.
func availableOf(ctx context.Context, tx db.Tx, users []string) (map[string]int64, error) {
	accounts := make([]string, len(users))
	for i, u := range users {
		accounts[i] = money.Available(u)
	}
	var rows []struct {
		ID      string `bun:"id"`
		Balance int64  `bun:"balance"`
	}
	if err := tx.NewSelect().Table("ledger_accounts").Column("id", "balance").Where("id IN (?)", bun.List(accounts)).
		Order("id").For("UPDATE").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read the balances of %d traders: %w", len(users), err)
	}
	out := make(map[string]int64, len(users))
	for _, r := range rows {
		for _, u := range users {
			if money.Available(u) == r.ID {
				out[u] = r.Balance
			}
		}
	}
	return out, nil
}
