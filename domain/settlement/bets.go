package settlement

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager.example.com/sdk/gamerecord"
	"wager/db"
	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/users"
)

// KindBet is the intent kind of a bet.
const KindBet = "bet"

// Bet statuses.
const (
	BetOpen     = "open"
	BetHeld     = "held" // the game's end is under review: paid once an admin releases or voids it
	BetWon      = "won"
	BetLost     = "lost"
	BetRefunded = "refunded"
)

// BetRecorder learns of bets in the transactions that confirm and settle
// them (the activity feed and the bettors' achievements).
type BetRecorder interface {
	BetPlaced(ctx context.Context, tx db.Tx, bettorID, gameID string, amount int64) error
	BetWon(ctx context.Context, tx db.Tx, bettorID, gameID string, payout int64) error
}

// Notifier tells a user something, in a transaction.
type Notifier interface {
	Send(ctx context.Context, tx db.Tx, userID, typ string, data any) error
}

// BettingClosers are the room events that close a game's betting: its
// first round is decided (rps: a reveal; connect four: a move) or it
// ended.
var BettingClosers = []domain.EventName{domain.EventRPSRoundReveal, domain.EventRPSResign, domain.EventConnect4Move, domain.EventConnect4Resign,
	domain.EventConnect4Timeout}

// bettingOpen reports whether a game takes bets: it is staked, active and
// none of BettingClosers happened in it. A free game never does: nobody
// loses anything by throwing it, so nobody may win on it either.
// NOT_FOUND when there is no such game.
func bettingOpen(ctx context.Context, idb bun.IDB, gameID string) (bool, error) {
	return game.StakedAndActiveBefore(ctx, idb, gameID, BettingClosers)
}

// PrepareBet prepares a USDC transfer from the bettor's wallet into the
// game's escrow, a bet on player onUserID. Errors: NOT_FOUND, FORBIDDEN (a
// player of the game), VALIDATION_ERROR (onUserId not a player, amount
// outside the limits), BETTING_CLOSED (a free game, or the game is over or
// its first round is decided), LINKED_TO_PLAYER (the bettor is linked to a
// player), LIMIT_EXCEEDED (the pool would pass its cap), player
// protection's refusals (see Protection), INSUFFICIENT_FUNDS (the wallet
// holds less on chain).
func (s *Service) PrepareBet(ctx context.Context, u users.User, gameID, onUserID string, amount int64) (money.Prepared, error) {
	meta, err := s.games.Metadata(ctx, gameID)
	if err != nil {
		return money.Prepared{}, err
	}
	players := make([]string, len(meta.Players))
	for i, p := range meta.Players {
		players[i] = p.UserID
	}
	if slices.Contains(players, u.ID) {
		return money.Prepared{}, domain.Errorf(domain.CodeForbidden, "players cannot bet on their own game")
	}
	v := domain.Validator{}
	v.Check(slices.Contains(players, onUserID), "onUserId", "must be the id of a player of this game")
	v.Check(amount >= MinBet && amount <= MaxDonation, "amountMinor",
		"must be at least 0.01 USDC and at most "+money.FormatUSDC(MaxDonation)+" USDC")
	if err := v.Err(); err != nil {
		return money.Prepared{}, err
	}
	if meta.StakeMinor == 0 {
		return money.Prepared{}, game.ErrFreeGame
	}
	open, err := bettingOpen(ctx, s.db, gameID)
	if err != nil {
		return money.Prepared{}, err
	}
	if !open {
		return money.Prepared{}, domain.Errorf(domain.CodeBettingClosed, "betting closes when the first round is decided")
	}
	if err := s.links.CheckNotLinked(ctx, s.db, u.ID, players); err != nil {
		return money.Prepared{}, err
	}
	if err := s.checkPoolCap(ctx, s.db, meta.StakeMinor*int64(len(players)), gameID, onUserID, amount); err != nil {
		return money.Prepared{}, err
	}
	if s.protect != nil {
		if err := s.protect.CheckBet(ctx, s.db, u.ID, amount, ""); err != nil {
			return money.Prepared{}, err
		}
	}
	p, err := s.money.Prepare(ctx, money.PrepareSpec{Kind: KindBet, User: u, To: s.EscrowAddress(gameID),
		Amount: amount, Reference: gameID})
	if err != nil {
		return p, err
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO bet_intents (intent_id, on_user_id) VALUES (?, ?)", p.IntentID, onUserID); err != nil {
		return money.Prepared{}, fmt.Errorf("record what bet %s is on: %w", p.IntentID, err)
	}
	return p, nil
}

// checkPoolCap refuses (LIMIT_EXCEEDED, limit "pool") a bet of amount on
// onUserID that would take that player's pool past its cap.
func (s *Service) checkPoolCap(ctx context.Context, idb bun.IDB, playerPot int64, gameID, onUserID string, amount int64) error {
	_, pools, err := poolsOf(ctx, idb, gameID)
	if err != nil {
		return err
	}
	var pool int64
	for _, p := range pools {
		if p.UserID == onUserID {
			pool = p.TotalMinor
		}
	}
	limit := s.links.PoolCap(playerPot)
	if pool+amount <= limit {
		return nil
	}
	return domain.Errorf(domain.CodeLimitExceeded,
		"a player's pool may hold at most %s USDC in this game (%d times the players' stakes); it holds %s USDC, so it takes at most %s USDC more",
		money.FormatUSDC(limit), limit/max(playerPot, 1), money.FormatUSDC(pool), money.FormatUSDC(max(limit-pool, 0))).
		With("limit", "pool").With("limitMinor", limit).With("usedMinor", pool)
}

// BetResult is the answer to a bet submit.
type BetResult struct {
	BetID       string `json:"betId" bun:"id"`
	Signature   string `json:"signature" bun:"signature"`
	OnUserID    string `json:"onUserId" bun:"on_user_id"`
	AmountMinor int64  `json:"amountMinor" bun:"amount_minor"`
	Refunded    bool   `json:"refunded" bun:"late" doc:"true when the bet could not join its pool when it landed (betting had closed, the pool had reached its cap, the bettor had become linked to a player, or could no longer put money in: a time-out, self-exclusion or loss limit reached since the prepare): it is in no pool and is refunded on chain to the wallet that paid it, never credited to the platform balance (while that wallet has no USDC token account, the refund waits for one)"`
}

// SubmitBet submits the signed bet (see money.Service.Submit) and answers
// once it is confirmed. The same intent twice moves money once and answers
// the same result.
func (s *Service) SubmitBet(ctx context.Context, userID, gameID, intentID, signed string) (BetResult, error) {
	r, err := s.money.SubmitFor(ctx, userID, intentID, signed, gameID, KindBet)
	if err != nil {
		return BetResult{}, err
	}
	var res BetResult
	if err := s.db.NewSelect().Table("bets").Column("id", "signature", "on_user_id", "amount_minor", "late").
		Where("signature = ?", r.Signature).Scan(ctx, &res); err != nil {
		return res, fmt.Errorf("read bet %s: %w", r.Signature, err)
	}
	return res, nil
}

// BetPlaced is the data of game:bet.
type BetPlaced struct {
	Bettor      chat.UserRef `json:"bettor"`
	OnUserID    string       `json:"onUserId"`
	AmountMinor int64        `json:"amountMinor"`
	Signature   string       `json:"signature"`
	TotalMinor  int64        `json:"totalMinor"`
	Pools       []Pool       `json:"pools"`
}

// ConfirmBet records a confirmed bet in the transaction that confirms its
// intent: the ledger entry from the escrow into the game's bet pool, the
// bet row, the line in the bettor's wallet history and game:bet. A bet
// that cannot join its pool when it lands (betting closed, the pool
// reached its cap, the bettor became linked to a player or was refused by
// player protection since the prepare) is marked late and refunded on
// chain from the escrow to the wallet that paid it, like a late donation
// (see signTransfer): credited to the platform balance, it would be a
// deposit that no deposit limit weighed.
func (s *Service) ConfirmBet(ctx context.Context, tx db.Tx, in money.Intent) error {
	gameID, sig, now := in.Reference, *in.Signature, s.now()
	var g struct {
		Stake   int64    `bun:"stake_minor"`
		Players []string `bun:"players,array"`
	}
	if err := tx.NewSelect().Table("games").Column("stake_minor").
		ColumnExpr("ARRAY(SELECT p.user_id::text FROM game_players AS p WHERE p.game_id = games.id ORDER BY p.seat) AS players").
		Where("id = ?", gameID).For("UPDATE").Scan(ctx, &g); err != nil {
		return err
	}
	var onUserID string
	if err := tx.NewSelect().Table("bet_intents").Column("on_user_id").Where("intent_id = ?", in.ID).Scan(ctx, &onUserID); err != nil {
		return fmt.Errorf("read what bet %s is on: %w", in.ID, err)
	}
	open, err := bettingOpen(ctx, tx, gameID)
	if err != nil {
		return err
	}
	if open {
		open, err = s.stillAllowed(ctx, tx, g.Stake*int64(len(g.Players)), g.Players, gameID, onUserID, in)
		if err != nil {
			return err
		}
	}
	if _, err := money.Post(ctx, tx, s.events, money.Posting{Kind: KindBet, Reference: sig, Memo: "bet on game " + gameID, At: now,
		Entries: []money.Entry{{Account: money.BetPool(gameID), Amount: in.AmountMinor},
			{Account: money.Escrow(gameID), Amount: -in.AmountMinor}}}); err != nil {
		return err
	}
	betStatus := BetOpen
	if !open {
		betStatus = BetRefunded
	}
	betID := uuid.NewString()
	if _, err := tx.ExecContext(ctx, `INSERT INTO bets (id, game_id, bettor_id, on_user_id, amount_minor, signature, status, payout_minor, late, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, betID, gameID, in.UserID, onUserID, in.AmountMinor, sig, betStatus,
		map[bool]int64{true: 0, false: in.AmountMinor}[open], !open, now); err != nil {
		return err
	}
	if err := money.RecordActivity(ctx, tx, money.Activity{UserID: in.UserID, Kind: money.KindBet, AmountMinor: -in.AmountMinor,
		Counterparty: "game " + gameID, Signature: sig, GameID: gameID}, now); err != nil {
		return err
	}
	if !open {
		// It stays in the bet pool's account, in no pool, until its refund
		// is confirmed (recordTransfer).
		var wallet string
		if err := tx.NewSelect().Table("users").Column("wallet_address").Where("id = ?", in.UserID).Scan(ctx, &wallet); err != nil {
			return err
		}
		return s.queueTransfer(tx, gameID, KindRefund, wallet, in.AmountMinor, sig, nil)
	}
	var username string
	if err := tx.NewSelect().Table("users").Column("username").Where("id = ?", in.UserID).Scan(ctx, &username); err != nil {
		return err
	}
	total, pools, err := poolsOf(ctx, tx, gameID)
	if err != nil {
		return err
	}
	if _, err := s.events.Append(ctx, tx, domain.GameStreamOf(gameID), now, domain.Event{Name: domain.EventBet, Data: BetPlaced{
		Bettor: chat.UserRef{UserID: in.UserID, Username: username}, OnUserID: onUserID, AmountMinor: in.AmountMinor,
		Signature: sig, TotalMinor: total, Pools: pools}}); err != nil {
		return err
	}
	if s.betRecorder == nil {
		return nil
	}
	return s.betRecorder.BetPlaced(ctx, tx, in.UserID, gameID, in.AmountMinor)
}

// stillAllowed reports whether a bet that lands in an open game may join
// its pool: the rules checked at its prepare still hold (the bettor is not
// linked to a player, the pool has room for it, and player protection does
// not refuse the bettor: a time-out, self-exclusion, or a loss or deposit
// limit made tighter since the prepare).
func (s *Service) stillAllowed(ctx context.Context, tx db.Tx, playerPot int64, players []string, gameID, onUserID string, in money.Intent) (bool, error) {
	bettorID, amount := in.UserID, in.AmountMinor
	for _, check := range []func() error{
		func() error { return s.links.CheckNotLinked(ctx, tx, bettorID, players) },
		func() error { return s.checkPoolCap(ctx, tx, playerPot, gameID, onUserID, amount) },
		func() error {
			if s.protect == nil {
				return nil
			}
			return s.protect.CheckBet(ctx, tx, bettorID, amount, in.ID)
		},
	} {
		err := check()
		var de *domain.Error
		if errors.As(err, &de) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// Pool is the bets on one player.
type Pool struct {
	UserID     string `json:"userId" bun:"user_id"`
	TotalMinor int64  `json:"totalMinor" bun:"total_minor"`
	Bettors    int    `json:"bettors" bun:"bettors"`
}

// poolsOf totals a game's bets (late ones are in no pool), one pool per
// player in seat order.
func poolsOf(ctx context.Context, idb bun.IDB, gameID string) (int64, []Pool, error) {
	pools := []Pool{}
	err := idb.NewSelect().TableExpr("game_players AS p").
		ColumnExpr("p.user_id").
		ColumnExpr("coalesce((SELECT sum(b.amount_minor) FROM bets b WHERE b.game_id = p.game_id AND b.on_user_id = p.user_id AND NOT b.late), 0) AS total_minor").
		ColumnExpr("(SELECT count(DISTINCT b.bettor_id) FROM bets b WHERE b.game_id = p.game_id AND b.on_user_id = p.user_id AND NOT b.late) AS bettors").
		Where("p.game_id = ?", gameID).OrderExpr("p.seat").Scan(ctx, &pools)
	if err != nil {
		return 0, nil, fmt.Errorf("total the bets of game %s: %w", gameID, err)
	}
	var total int64
	for _, p := range pools {
		total += p.TotalMinor
	}
	return total, pools, nil
}

// Bet is one bet as the list shows it.
type Bet struct {
	ID          string    `json:"id" bun:"id"`
	UserID      string    `json:"userId" bun:"bettor_id"`
	Username    string    `json:"username" bun:"username"`
	OnUserID    string    `json:"onUserId" bun:"on_user_id"`
	AmountMinor int64     `json:"amountMinor" bun:"amount_minor"`
	Signature   string    `json:"signature" bun:"signature"`
	CreatedAt   time.Time `json:"createdAt" bun:"created_at"`
	Status      string    `json:"status" bun:"status" enum:"open,held,won,lost,refunded" doc:"held: the game's end is under review, and the bet is paid once an admin releases it (as the game ended) or voids it (refunded)"`
	PayoutMinor int64     `json:"payoutMinor" bun:"payout_minor" doc:"what the bettor was paid: the winnings, the bet back, or 0"`
}

// Bets is a game's betting pools.
type Bets struct {
	Open         bool   `json:"open" doc:"whether the game takes bets now (never a free game's)"`
	PoolCapMinor int64  `json:"poolCapMinor" doc:"the most each player's pool may hold: POOL_CAP_MULTIPLE times the player pot (0 for a free game, which takes no bets)"`
	TotalMinor   int64  `json:"totalMinor"`
	FeeBps       int    `json:"feeBps"`
	Pools        []Pool `json:"pools"`
	Bets         []Bet  `json:"bets" doc:"newest first"`
}

// BetsOf returns a game's pools and bets. NOT_FOUND when there is no such game.
func (s *Service) BetsOf(ctx context.Context, gameID string) (Bets, error) {
	meta, err := s.games.Metadata(ctx, gameID)
	if err != nil {
		return Bets{}, err
	}
	out := Bets{FeeBps: BetFeeBps, Bets: []Bet{}, PoolCapMinor: s.links.PoolCap(meta.StakeMinor * int64(len(meta.Players)))}
	if out.Open, err = bettingOpen(ctx, s.db, gameID); err != nil {
		return out, err
	}
	if out.TotalMinor, out.Pools, err = poolsOf(ctx, s.db, gameID); err != nil {
		return out, err
	}
	if err := s.db.NewSelect().TableExpr("bets AS b").Join("JOIN users AS u ON u.id = b.bettor_id").
		ColumnExpr("b.id, b.bettor_id, u.username, b.on_user_id, b.amount_minor, b.signature, b.created_at, b.status, b.payout_minor").
		Where("b.game_id = ?", gameID).OrderExpr("b.created_at DESC, b.id DESC").Scan(ctx, &out.Bets); err != nil {
		return out, fmt.Errorf("list the bets of game %s: %w", gameID, err)
	}
	return out, nil
}

// BetSettledNotice is the data of a bet_settled notification.
type BetSettledNotice struct {
	GameID      string `json:"gameId"`
	BetID       string `json:"betId"`
	OnUserID    string `json:"onUserId"`
	AmountMinor int64  `json:"amountMinor"`
	Status      string `json:"status"`
	PayoutMinor int64  `json:"payoutMinor"`
}

// holdBets marks a finished game's open bets held for review, in its
// settlement transaction: they stay in the pool until SettleHeldBets.
func (s *Service) holdBets(ctx context.Context, tx db.Tx, gameID string) error {
	if _, err := tx.ExecContext(ctx, "UPDATE bets SET status = ? WHERE game_id = ? AND status = ? AND NOT late",
		BetHeld, gameID, BetOpen); err != nil {
		return fmt.Errorf("hold the bets of game %s: %w", gameID, err)
	}
	return nil
}

// SettleHeldBets pays out the bets of a game held for review, in tx: as
// the game ended when winner is its winner, every bet refunded in full
// when winner is "" (a void). It returns the on-chain transfer it queued
// (the pool swept to the vault), if any.
func (s *Service) SettleHeldBets(ctx context.Context, tx db.Tx, gameID, winner string) ([]game.SettlementTransfer, error) {
	var queued []game.SettlementTransfer
	err := s.settleBets(ctx, tx, gameID, winner, BetHeld, &queued)
	return queued, err
}

// settleBets pays out a finished game's bets in status (open at its end,
// held after a review) in tx (see BetPayouts): winnings and refunds to the
// bettors' platform balances, the fee and what floors leave over to the
// treasury, and the pool's USDC swept from the escrow to the vault (added
// to told unless that is nil).
func (s *Service) settleBets(ctx context.Context, tx db.Tx, gameID, winner, status string, told *[]game.SettlementTransfer) error {
	var bets []struct {
		ID       string `bun:"id"`
		Bettor   string `bun:"bettor_id"`
		OnUserID string `bun:"on_user_id"`
		Amount   int64  `bun:"amount_minor"`
	}
	if err := tx.NewSelect().Table("bets").Column("id", "bettor_id", "on_user_id", "amount_minor").
		Where("game_id = ? AND status = ? AND NOT late", gameID, status).OrderExpr("created_at, id").For("UPDATE").
		Scan(ctx, &bets); err != nil {
		return fmt.Errorf("read the bets of game %s: %w", gameID, err)
	}
	if len(bets) == 0 {
		return nil
	}
	amounts, onWinner := make([]int64, len(bets)), make([]bool, len(bets))
	var total int64
	for i, b := range bets {
		amounts[i], onWinner[i] = b.Amount, winner != "" && b.OnUserID == winner
		total += b.Amount
	}
	payouts, fee, remainder := BetPayouts(amounts, onWinner)
	refund := !slices.Contains(onWinner, true) // a draw, a cancellation, or no bet on the winner
	credit := map[string]int64{}
	var order []string
	for i, b := range bets {
		if payouts[i] == 0 {
			continue
		}
		if _, ok := credit[b.Bettor]; !ok {
			order = append(order, b.Bettor)
		}
		credit[b.Bettor] += payouts[i]
	}
	entries := []money.Entry{{Account: money.BetPool(gameID), Amount: -total}}
	for _, u := range order {
		entries = append(entries, money.Entry{Account: money.Available(u), Amount: credit[u]})
	}
	if fee+remainder > 0 {
		entries = append(entries, money.Entry{Account: money.Treasury, Amount: fee + remainder})
	}
	if _, err := money.Post(ctx, tx, s.events, money.Posting{Kind: "bet_settlement", Reference: "bets:" + gameID,
		Memo: "bets of game " + gameID, Entries: entries, At: s.now()}); err != nil {
		return fmt.Errorf("post the bets of game %s: %w", gameID, err)
	}
	now := s.now()
	for i, b := range bets {
		status, kind := BetLost, money.KindBetWinnings
		switch {
		case refund:
			status, kind = BetRefunded, money.KindBetRefund
		case onWinner[i]:
			status = BetWon
		}
		if _, err := tx.ExecContext(ctx, "UPDATE bets SET status = ?, payout_minor = ? WHERE id = ?", status, payouts[i], b.ID); err != nil {
			return err
		}
		if payouts[i] > 0 {
			if err := money.RecordActivity(ctx, tx, money.Activity{UserID: b.Bettor, Kind: kind, AmountMinor: payouts[i],
				Counterparty: "game " + gameID, GameID: gameID}, now); err != nil {
				return err
			}
		}
		if s.notify != nil {
			if err := s.notify.Send(ctx, tx, b.Bettor, notify.BetSettled, BetSettledNotice{GameID: gameID, BetID: b.ID,
				OnUserID: b.OnUserID, AmountMinor: b.Amount, Status: status, PayoutMinor: payouts[i]}); err != nil {
				return err
			}
		}
		if status == BetWon && s.betRecorder != nil {
			if err := s.betRecorder.BetWon(ctx, tx, b.Bettor, gameID, payouts[i]); err != nil {
				return err
			}
		}
	}
	return s.queueTransfer(tx, gameID, KindSweep, s.money.DepositAddress().String(), total, "", told)
}

// ReadOpenBets adds to reads the sum of a game's open bets placed in time
// (a late one is refunded, never pooled) and their bettors, for its end.
func (s *Service) ReadOpenBets(reads *db.Reads, gameID string, pools *int64, bettors *[]string) {
	reads.Column(pools, "SELECT coalesce(sum(amount_minor), 0) FROM bets WHERE game_id = ? AND status = 'open' AND NOT late", gameID)
	reads.Column(db.JSON(bettors), "SELECT coalesce(json_agg(DISTINCT bettor_id), '[]') FROM bets WHERE game_id = ? AND status = 'open' AND NOT late", gameID)
}

// Payouts are what a finished game's pooled bets paid once settled, in the
// order they were placed: each winning bet's payout (gamerecord.PayoutBet)
// and each refunded bet's refund (gamerecord.PayoutRefund). Bets not yet
// settled (open, or held for review) paid nothing yet.
func (s *Service) Payouts(ctx context.Context, idb bun.IDB, gameID string) ([]gamerecord.Payout, error) {
	out := []gamerecord.Payout{}
	if err := idb.NewRaw(`SELECT bettor_id AS user_id, payout_minor AS amount_minor,
			CASE WHEN status = ? THEN ? ELSE ? END AS kind
		FROM bets WHERE game_id = ? AND NOT late AND status IN (?, ?) AND payout_minor > 0 ORDER BY created_at, id`,
		BetRefunded, gamerecord.PayoutRefund, gamerecord.PayoutBet, gameID, BetWon, BetRefunded).Scan(ctx, &out); err != nil &&
		!errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read what the bets of game %s paid: %w", gameID, err)
	}
	return out, nil
}
