package integrity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/audit"
	"wager/domain/chat"
	"wager/domain/eventlog"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/notify"
)

// Review statuses.
const (
	StatusHeld     = "held"     // the bets and market wait for an admin
	StatusReleased = "released" // settled as the game ended
	StatusVoided   = "voided"   // bets refunded, shares paid half each
)

// Why a game's end was held.
const (
	ReasonResigned = "resign"  // the loser resigned
	ReasonOnTime   = "timeout" // a round or turn was lost on time
	ReasonLinked   = "linked"  // a bettor or trader was linked to a player by the end
)

// Events are this package's room events by name, each with its data type
// (see rules.Events): domain.EventReview when a held game's review is
// decided.
var Events = map[domain.EventName]any{domain.EventReview: Decided{}}

// Decided is the data of game:review: the review as decided, and the
// on-chain transfers the decision queued.
type Decided struct {
	Review
	Transfers []game.SettlementTransfer `json:"transfers" doc:"the on-chain transfers the decision queued (the bet pool swept to the vault), pending; game:settlement:transfer follows each one's confirmation"`
}

// Holds reports whether a finished game's bets and market wait for
// review: a staked game won by resignation or with a round or turn lost
// on time (the ways a player throws a game), whose pools together or
// whose market's paid volume exceed the player pot. The players' own
// payout is never held.
func Holds(stake int64, players int, o rules.Outcome, pools, paid int64) bool {
	if !suspicious(stake, o) {
		return false
	}
	bets := stake * int64(players)
	return pools > bets || paid > bets
}

// suspicious is a staked game's win that a player could have thrown.
func suspicious(stake int64, o rules.Outcome) bool {
	return stake > 0 && o.Winner != "" && (o.Reason == "resign" || o.TimedOut)
}

// Review is a game's integrity record.
type Review struct {
	GameID      string        `json:"gameId" bun:"game_id"`
	Status      string        `json:"status" bun:"status" enum:"held,released,voided"`
	WinnerID    string        `json:"winnerId" bun:"winner_id" doc:"the game's winner, whom a release pays the bets and shares on"`
	Reason      string        `json:"reason" bun:"reason" enum:"resign,timeout,linked" doc:"why its end was held: resign (the loser resigned), timeout (a round or turn was lost on time) or linked (a bettor or trader was linked to a player by the end)"`
	PoolsMinor  int64         `json:"poolsMinor" bun:"pools_minor" doc:"the game's bets when it ended"`
	VolumeMinor int64         `json:"volumeMinor" bun:"volume_minor" doc:"what buyers had paid for shares in the game's market when it ended"`
	HeldAt      time.Time     `json:"heldAt" bun:"held_at"`
	DecidedAt   *time.Time    `json:"decidedAt" bun:"decided_at"`
	DecidedBy   *chat.UserRef `json:"decidedBy" bun:"-" doc:"the admin who released or voided it"`
	DeciderID   *string       `json:"-" bun:"decided_by"`
	DeciderName *string       `json:"-" bun:"decider_name,scanonly"`

	// DecisionReason stays with staff: the room's game:review leaves it out.
	DecisionReason *string `json:"decisionReason" bun:"decision_reason" doc:"why the admin released or voided it, as they typed it; null while held, in the game's room event (game:review) and for decisions made before reasons were asked"`
}

// ReviewHeld is the data of a review_hold notification.
type ReviewHeld struct {
	GameID string `json:"gameId"`
	Reason string `json:"reason" enum:"resign,timeout,linked" doc:"why its end was held: resign (the loser resigned), timeout (a round or turn was lost on time) or linked (a bettor or trader was linked to a player by the end)"`
}

// Notifier tells users something in the caller's transaction.
type Notifier interface {
	SendMany(ctx context.Context, tx db.Tx, msgs []notify.Message) error
}

// BetSettler settles a game's bets: at the game's end (held or not) and
// when its review is decided.
type BetSettler interface {
	// StartSettle adds what paying out g reads to reads, and returns what
	// pays it out once they have run, holding its bets for the review
	// reason given ("": not held).
	StartSettle(tx db.Tx, g game.Game, players []string, o rules.Outcome, reads *db.Reads) func(ctx context.Context, review string) (game.Settlement, error)
	SettleHeldBets(ctx context.Context, tx db.Tx, gameID, winner string) ([]game.SettlementTransfer, error)
	// ReadOpenBets adds to reads the sum of the game's open bets that
	// were in time, and their bettors.
	ReadOpenBets(reads *db.Reads, gameID string, pools *int64, bettors *[]string)
}

// MarketCloser resolves a game's market, or holds it for review.
type MarketCloser interface {
	Resolve(ctx context.Context, tx db.Tx, gameID, winner string) error
	Hold(ctx context.Context, tx db.Tx, gameID string) ([]string, error)
	// ReadOpen adds to reads what buyers paid in the game's open market
	// (0 when it has none), and who holds its shares.
	ReadOpen(reads *db.Reads, gameID string, paid *int64, holders *[]string)
}

// Referee settles finished games, holding the bets and market of
// suspicious ends, and runs the admins' review queue.
type Referee struct {
	db     *bun.DB
	now    domain.Clock
	links  *Links
	games  *game.Service
	bets   BetSettler
	market MarketCloser
	notify Notifier
	events *eventlog.Log
	log    GamesLog
}

// GamesLog is the public log of games: a decided review makes a held
// game's money final.
type GamesLog interface {
	Final(tx db.Tx, gameID, integrity string) error
}

// RefereeDeps are what a Referee works with.
type RefereeDeps struct {
	Links  *Links
	Games  *game.Service
	Bets   BetSettler
	Market MarketCloser
	Notify Notifier
	Events *eventlog.Log // where the room hears of a decided review
	Log    GamesLog
}

// NewReferee returns the review service.
func NewReferee(bdb *bun.DB, now domain.Clock, d RefereeDeps) *Referee {
	return &Referee{db: bdb, now: now, links: d.Links, games: d.Games, bets: d.Bets, market: d.Market, notify: d.Notify,
		events: d.Events, log: d.Log}
}

// ReadEnd pays out a finished game (see settlement.Service.StartSettle):
// the games' settlement, the first participant of their end to write. It
// resolves the game's market too, unless the end is held:
// then the players are paid as usual, but the bets and the market are
// held, their holders told (review_hold), and the game waits in the
// review queue. An end is held when it Holds, or when a bettor or trader
// of a staked game's pools or market is linked to a player by then (a
// link made after the bet or trade, which the checks at the bet and the
// order could not see). A free game has neither pools nor market: it is
// only paid out.
func (r *Referee) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	g := e.Game
	pay := r.bets.StartSettle(e.Tx, g, g.Players, e.Outcome, e.Reads)
	var st stakes
	if g.StakeMinor > 0 && e.Outcome.Winner != "" {
		r.bets.ReadOpenBets(e.Reads, g.ID, &st.pools, &st.bettors)
		r.market.ReadOpen(e.Reads, g.ID, &st.paid, &st.holders)
	}
	return func(ctx context.Context, e *game.Ending) error {
		out, err := r.settle(ctx, e.Tx, e.Game, e.Outcome, st, pay)
		e.Paid(out)
		return err
	}, nil
}

// stakes is what a staked game's end reads of the money riding on it
// besides the stakes: its open bets and what its market's buyers paid.
type stakes struct {
	pools, paid      int64
	bettors, holders []string
}

// settle pays out a finished game, holding its bets and market for the
// review reason they are held for, if any; it resolves the market of an
// end that is not held.
func (r *Referee) settle(ctx context.Context, tx db.Tx, g game.Game, o rules.Outcome, st stakes,
	pay func(ctx context.Context, review string) (game.Settlement, error)) (game.Settlement, error) {
	reason := ""
	people := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(st.bettors), st.holders...))))
	switch {
	case g.StakeMinor == 0:
	case Holds(g.StakeMinor, len(g.Players), o, st.pools, st.paid):
		reason = ReasonResigned
		if o.Reason != "resign" {
			reason = ReasonOnTime
		}
	case len(people) > 0:
		linked, err := r.links.Linked(ctx, tx, people, g.Players)
		if err != nil {
			return game.Settlement{}, err
		}
		if len(linked) > 0 {
			reason = ReasonLinked
		}
	}
	out, err := pay(ctx, reason)
	switch {
	case err != nil:
		return out, err
	case reason != "":
		return out, r.hold(ctx, tx, g, o, reason, st.pools, st.paid)
	case g.StakeMinor > 0:
		return out, r.market.Resolve(ctx, tx, g.ID, o.Winner)
	}
	return out, nil
}

// hold holds a finished game's bets (held by the payout already) and
// market for review, and tells their holders.
func (r *Referee) hold(ctx context.Context, tx db.Tx, g game.Game, o rules.Outcome, reason string, pools, paid int64) error {
	traders, err := r.market.Hold(ctx, tx, g.ID)
	if err != nil {
		return err
	}
	var bettors []string
	if err := tx.NewRaw(`WITH review AS (
			INSERT INTO integrity_reviews (game_id, status, winner_id, reason, pools_minor, volume_minor, held_at)
			VALUES (?, 'held', ?, ?, ?, ?, ?) RETURNING 1
		)
		SELECT DISTINCT bettor_id FROM bets WHERE game_id = ? AND status = 'held' ORDER BY bettor_id`,
		g.ID, o.Winner, reason, pools, paid, r.now(), g.ID).Scan(ctx, &bettors); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("hold game %s for review: %w", g.ID, err)
	}
	var msgs []notify.Message
	for _, u := range append(bettors, traders...) {
		if !slices.ContainsFunc(msgs, func(m notify.Message) bool { return m.UserID == u }) {
			msgs = append(msgs, notify.Message{UserID: u, Type: notify.ReviewHold, Data: ReviewHeld{GameID: g.ID, Reason: reason}})
		}
	}
	if len(msgs) > 0 {
		return r.notify.SendMany(ctx, tx, msgs)
	}
	return nil
}

// Of returns a game's integrity record, or nil when it was never held.
func (r *Referee) Of(ctx context.Context, gameID string) (*Review, error) {
	id, ok := domain.CanonicalID(gameID)
	if !ok {
		return nil, nil
	}
	var out []Review
	if err := r.reviews(r.db).Where("r.game_id = ?", id).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read the integrity record of game %s: %w", id, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	out[0].finish()
	return &out[0], nil
}

func (r *Referee) reviews(idb bun.IDB) *bun.SelectQuery {
	return idb.NewSelect().TableExpr("integrity_reviews AS r").ColumnExpr("r.*, u.username AS decider_name").
		Join("LEFT JOIN users AS u ON u.id = r.decided_by")
}

// finish fills DecidedBy from the row's decider.
func (v *Review) finish() {
	if v.DeciderID != nil && v.DeciderName != nil {
		v.DecidedBy = &chat.UserRef{UserID: *v.DeciderID, Username: *v.DeciderName}
	}
}

// MaxDecisionReason is the longest reason for a release or void, in
// characters.
const MaxDecisionReason = 500

// DecisionReason returns an admin's reason for a release or void as it is
// recorded: user text (domain.UserText, line breaks kept) of 1 to
// MaxDecisionReason characters. Errors: VALIDATION_ERROR naming reason.
func DecisionReason(text string) (string, error) {
	clean, err := domain.UserText("reason", text, true, MaxDecisionReason)
	if err != nil {
		return "", err
	}
	if clean == "" {
		return "", domain.Invalid(map[string]string{"reason": "is required (1 to 500 characters)"})
	}
	return clean, nil
}

// Release settles a held game's bets and market as the game ended, for
// the admin actorID, who gives reason (see DecisionReason). Errors:
// VALIDATION_ERROR (the reason), NOT_FOUND (the game was never held),
// CONFLICT (it was released or voided already), CONFLICT_OF_INTEREST
// (the admin has a stake in it).
func (r *Referee) Release(ctx context.Context, actorID, gameID, reason string) (Review, error) {
	return r.decide(ctx, actorID, gameID, reason, false)
}

// Void refunds every bet of a held game in full and resolves its market at
// half a USDC a share, for the admin actorID, who gives reason. Errors:
// as Release's.
func (r *Referee) Void(ctx context.Context, actorID, gameID, reason string) (Review, error) {
	return r.decide(ctx, actorID, gameID, reason, true)
}

// decide settles a held game's review in one transaction: the game's row
// first (the lock order of settlement), then the review's, the admin's
// stakes in it, the bets, the market, the record, the audit entry and the
// room's event.
func (r *Referee) decide(ctx context.Context, actorID, gameID, reason string, void bool) (Review, error) {
	reason, err := DecisionReason(reason)
	if err != nil {
		return Review{}, err
	}
	id, ok := domain.CanonicalID(gameID)
	if !ok {
		return Review{}, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	var out Review
	err = db.Transact(ctx, r.db, func(ctx context.Context, tx db.Tx) error {
		var rows []Review
		if err := tx.NewRaw(`SELECT r.* FROM integrity_reviews AS r JOIN games AS g ON g.id = r.game_id
			WHERE r.game_id = ? FOR UPDATE OF g, r`, id).Scan(ctx, &rows); err != nil {
			return fmt.Errorf("lock the integrity record of game %s: %w", id, err)
		}
		if len(rows) == 0 {
			return domain.Errorf(domain.CodeNotFound, "game %s was never held for review", id)
		}
		out = rows[0]
		if out.Status != StatusHeld {
			return domain.Errorf(domain.CodeConflict, "the review of game %s was decided already: %s", id, out.Status)
		}
		if err := r.CheckStaff(ctx, tx, actorID, id); err != nil {
			return err
		}
		winner, status, action := out.WinnerID, StatusReleased, audit.IntegrityRelease
		if void {
			winner, status, action = "", StatusVoided, audit.IntegrityVoid
		}
		queued, err := r.bets.SettleHeldBets(ctx, tx, id, winner)
		if err != nil {
			return err
		}
		if err := r.market.Resolve(ctx, tx, id, winner); err != nil {
			return err
		}
		now := r.now()
		if err := tx.NewRaw(`WITH decided AS (
				UPDATE integrity_reviews SET status = ?, decided_at = ?, decided_by = ?, decision_reason = ? WHERE game_id = ? RETURNING *
			)
			SELECT d.*, u.username AS decider_name FROM decided AS d JOIN users AS u ON u.id = d.decided_by`,
			status, now, actorID, reason, id).Scan(ctx, &out); err != nil {
			return fmt.Errorf("record the review of game %s: %w", id, err)
		}
		out.finish()
		if err := audit.Record(ctx, tx, audit.Entry{ActorID: actorID, Action: action, Target: audit.GameTarget(id), Data: out, At: now}); err != nil {
			return err
		}
		if err := r.log.Final(tx, id, status); err != nil {
			return err
		}
		public := out
		public.DecisionReason = nil
		_, err = r.events.Append(ctx, tx, domain.GameStreamOf(id), now, domain.Event{Name: domain.EventReview,
			Data: Decided{Review: public, Transfers: append([]game.SettlementTransfer{}, queued...)}})
		return err
	})
	return out, err
}

// Bettor is one bet of a held game, as the queue shows it.
type Bettor struct {
	UserID      string `json:"userId" bun:"bettor_id"`
	Username    string `json:"username" bun:"username"`
	OnUserID    string `json:"onUserId" bun:"on_user_id"`
	AmountMinor int64  `json:"amountMinor" bun:"amount_minor"`
}

// Trader is one holding in a held game's market.
type Trader struct {
	UserID    string `json:"userId" bun:"user_id"`
	Username  string `json:"username" bun:"username"`
	OutcomeID string `json:"outcomeId" bun:"outcome_id" doc:"the player whose shares these are"`
	Shares    int64  `json:"shares" bun:"shares"`
	CostMinor int64  `json:"costMinor" bun:"cost_minor" doc:"paid for the shares less received for shares sold"`
}

// PlayerLink is an account of a bettor or trader linked to a player.
type PlayerLink struct {
	UserID   string     `json:"userId" doc:"the bettor or trader"`
	PlayerID string     `json:"playerId"`
	Username string     `json:"playerUsername"`
	Reasons  []string   `json:"reasons"`
	Evidence []Evidence `json:"evidence" doc:"what made the link, when and by whom, newest first: up to 10 of each kind"`
}

// Case is a held game with what an admin needs to decide it.
type Case struct {
	Review
	GameType   string       `json:"gameType" enum:"connect4,rps"`
	StakeMinor int64        `json:"stakeMinor"`
	Players    []game.Seat  `json:"players"`
	Bettors    []Bettor     `json:"bettors"`
	Traders    []Trader     `json:"traders"`
	Links      []PlayerLink `json:"links" doc:"bettors and traders linked to a player, why, and the evidence"`
	History    any          `json:"history" schema:"GameHistory" doc:"the game's revealed rounds (rps) or moves (connect4)"`
	Result     *game.Result `json:"result"`
	EndedAt    *time.Time   `json:"endedAt"`
	Conflicts  []Conflict   `json:"conflicts" doc:"the stakes you, the admin asking, have in the game: with any, your release or void is refused (403 CONFLICT_OF_INTEREST) and another admin must decide it; empty when you may"`
}

// Queue returns the held games, longest waiting first, each with its
// bettors, traders, their links to the players, the game's history and
// the stakes the admin viewerID has in it.
func (r *Referee) Queue(ctx context.Context, viewerID string) ([]Case, error) {
	var held []Review
	if err := r.reviews(r.db).Where("r.status = ?", StatusHeld).OrderExpr("r.held_at, r.game_id").Scan(ctx, &held); err != nil {
		return nil, fmt.Errorf("list the held games: %w", err)
	}
	out := make([]Case, 0, len(held))
	for _, h := range held {
		h.finish()
		c, err := r.caseOf(ctx, h)
		if err != nil {
			return nil, err
		}
		c.Conflicts = []Conflict{}
		if viewerID != "" {
			if c.Conflicts, err = r.conflictsOf(ctx, r.db, viewerID, h.GameID); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func (r *Referee) caseOf(ctx context.Context, h Review) (Case, error) {
	meta, err := r.games.Metadata(ctx, h.GameID)
	if err != nil {
		return Case{}, err
	}
	c := Case{Review: h, GameType: meta.GameType, StakeMinor: meta.StakeMinor, Players: meta.Players, History: meta.History,
		Result: meta.Result, EndedAt: meta.EndedAt, Bettors: []Bettor{}, Traders: []Trader{}, Links: []PlayerLink{}}
	if err := r.db.NewSelect().TableExpr("bets AS b").Join("JOIN users AS u ON u.id = b.bettor_id").
		ColumnExpr("b.bettor_id, u.username, b.on_user_id, b.amount_minor").
		Where("b.game_id = ? AND NOT b.late", h.GameID).OrderExpr("b.created_at, b.id").Scan(ctx, &c.Bettors); err != nil {
		return c, fmt.Errorf("read the bettors of game %s: %w", h.GameID, err)
	}
	if err := r.db.NewSelect().TableExpr("market_positions AS p").Join("JOIN users AS u ON u.id = p.user_id").
		ColumnExpr("p.user_id, u.username, p.outcome_id, p.shares, p.cost_minor").
		Where("p.game_id = ? AND (p.shares > 0 OR p.cost_minor <> 0)", h.GameID).OrderExpr("u.username, p.outcome_id").
		Scan(ctx, &c.Traders); err != nil {
		return c, fmt.Errorf("read the traders of game %s: %w", h.GameID, err)
	}
	var people, players []string
	for _, b := range c.Bettors {
		people = append(people, b.UserID)
	}
	for _, t := range c.Traders {
		people = append(people, t.UserID)
	}
	for _, p := range meta.Players {
		players = append(players, p.UserID)
	}
	if len(people) == 0 {
		return c, nil
	}
	pairs, err := r.links.Linked(ctx, r.db, people, players)
	if err != nil {
		return c, err
	}
	for _, p := range pairs {
		c.Links = append(c.Links, PlayerLink{UserID: p.UserID, PlayerID: p.Link.UserID, Username: p.Username, Reasons: p.Reasons,
			Evidence: p.Evidence})
	}
	return c, nil
}
