// Package tips runs tips: USDC sent from one user's wallet straight to
// another user's wallet (never through a platform account), prepared and
// signed like every wallet transfer, and announced once confirmed: a
// notification to the recipient, a feed entry, the tipper's first-tip
// achievement, both wallet histories and, for a tip given in a game's chat
// or a conversation, a system message there.
package tips

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/users"
)

// KindTip is the intent kind of a tip.
const KindTip = "tip"

// Tip limits in USDC minor units.
const (
	MinTip = 10_000 // 0.01 USDC
	MaxTip = money.MaxAmount
)

// Context is the chat a tip is given in.
type Context struct {
	Type string `json:"type" enum:"game,dm" doc:"game: the game's chat; dm: your conversation with the recipient"`
	ID   string `json:"id" doc:"the game id, or for dm the recipient's user id"`
}

// Recorder learns of every confirmed tip in the transaction that confirms
// it (the activity feed and the tipper's achievements).
type Recorder interface {
	TipConfirmed(ctx context.Context, tx db.Tx, fromID, toID string, amount int64) error
}

// Service runs tips.
type Service struct {
	db       *bun.DB
	users    *users.Service
	money    *money.Service
	chat     *chat.Service
	notify   *notify.Service
	now      domain.Clock
	recorder Recorder
	protect  Protection
}

// Protection is what player protection says about a tip: whether its
// sender may put money in now.
type Protection interface {
	CheckTip(ctx context.Context, idb bun.IDB, userID string) error
}

// Deps are the Service's optional collaborators.
type Deps struct {
	// Recorder learns of every confirmed tip (nil: nobody).
	Recorder Recorder
	// Protect answers player protection's rules of tips sent (nil: none).
	Protect Protection
}

// New returns a Service; Confirm is what confirms its intents.
func New(bdb *bun.DB, u *users.Service, m *money.Service, c *chat.Service, n *notify.Service, now domain.Clock, d Deps) *Service {
	return &Service{db: bdb, users: u, money: m, chat: c, notify: n, now: now, recorder: d.Recorder, protect: d.Protect}
}

// Prepare prepares a USDC transfer from the tipper's wallet to the
// recipient's wallet (the platform pays the network fee; the tipper's
// wallet pays the rent of the recipient's USDC account when it has none).
// Errors: VALIDATION_ERROR (amount outside the limits, a tip to yourself, a
// conversation with someone other than the recipient, a game that is not
// active or that neither of the two plays), NOT_FOUND (no such
// recipient, game or user), FORBIDDEN (a block between the two, for a tip
// in their conversation), player protection's refusals of the sender
// (see Protection), INSUFFICIENT_FUNDS (the wallet holds less on chain,
// or cannot pay that rent).
func (s *Service) Prepare(ctx context.Context, from users.User, toUserID string, amount int64, where *Context) (money.Prepared, error) {
	if amount < MinTip || amount > MaxTip {
		return money.Prepared{}, domain.Invalid(map[string]string{"amountMinor": fmt.Sprintf(
			"must be from %s to %s", money.USDC(MinTip), money.USDC(MaxTip))})
	}
	if id, ok := domain.CanonicalID(toUserID); ok && id == from.ID {
		return money.Prepared{}, domain.Invalid(map[string]string{"toUserId": "is you: tips go to another user"})
	}
	if where != nil {
		if err := chat.CheckContextType(where.Type); err != nil {
			return money.Prepared{}, domain.Invalid(map[string]string{"context.type": "must be game or dm"})
		}
	}
	to, err := s.users.ByID(ctx, toUserID)
	if err != nil {
		return money.Prepared{}, err
	}
	if blocked, err := users.EitherBlocked(ctx, s.db, from.ID, to.ID); err != nil {
		return money.Prepared{}, err
	} else if blocked {
		return money.Prepared{}, domain.Errorf(domain.CodeForbidden, "you cannot tip this user: one of you has blocked the other")
	}
	var ctxType, ctxID *string
	if where != nil {
		id, err := s.checkContext(ctx, from.ID, to.ID, *where)
		if err != nil {
			return money.Prepared{}, err
		}
		ctxType, ctxID = &where.Type, &id
	}
	if s.protect != nil {
		if err := s.protect.CheckTip(ctx, s.db, from.ID); err != nil {
			return money.Prepared{}, err
		}
	}
	wallet, err := solana.PublicKeyFromBase58(to.WalletAddress)
	if err != nil {
		return money.Prepared{}, fmt.Errorf("parse the wallet %q of user %s: %w", to.WalletAddress, to.ID, err)
	}
	p, err := s.money.Prepare(ctx, money.PrepareSpec{Kind: KindTip, User: from, To: wallet, Amount: amount,
		Reference: to.ID, SenderOpensAccount: true})
	if err != nil {
		return p, err
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO tip_intents (intent_id, to_user_id, context_type, context_id) VALUES (?, ?, ?, ?)",
		p.IntentID, to.ID, ctxType, ctxID); err != nil {
		return money.Prepared{}, fmt.Errorf("store tip intent %s: %w", p.IntentID, err)
	}
	return p, nil
}

// checkContext checks the chat a tip is given in and returns its
// canonical id.
func (s *Service) checkContext(ctx context.Context, fromID, toID string, where Context) (string, error) {
	if where.Type == chat.ContextGame {
		return s.checkGame(ctx, fromID, toID, where.ID)
	}
	other, err := s.users.ByID(ctx, where.ID)
	if err != nil {
		return "", err
	}
	if other.ID != toID {
		return "", domain.Invalid(map[string]string{"context": "a tip in a conversation goes to the other user in it: id must be toUserId"})
	}
	blocked, err := s.chat.EitherBlocked(ctx, fromID, toID)
	if err != nil {
		return "", err
	}
	if blocked {
		return "", domain.Errorf(domain.CodeForbidden, "you cannot tip this user in your conversation: one of you has blocked the other")
	}
	return other.ID, nil
}

// checkGame checks that a tip may be announced in the chat of game id:
// the game is active and the tipper or the recipient plays it. Otherwise
// anyone could post a system message into any game's chat, finished ones
// included, for the price of a tip that goes to someone of their choice
// (a second account). The game is read from the database, not the games'
// cache, which may not have seen it end on another instance.
func (s *Service) checkGame(ctx context.Context, fromID, toID, id string) (string, error) {
	id, ok := domain.CanonicalID(id)
	if !ok {
		return "", domain.Errorf(domain.CodeNotFound, "no such game")
	}
	var g struct {
		Status string `bun:"status"`
		Plays  bool   `bun:"plays"`
	}
	err := s.db.NewRaw(`SELECT g.status, EXISTS (SELECT 1 FROM game_players AS p WHERE p.game_id = g.id AND p.user_id IN (?, ?)) AS plays
		FROM games AS g WHERE g.id = ?`, fromID, toID, id).Scan(ctx, &g)
	if errors.Is(err, sql.ErrNoRows) {
		return "", domain.Errorf(domain.CodeNotFound, "no such game")
	} else if err != nil {
		return "", fmt.Errorf("read game %s for a tip in its chat: %w", id, err)
	}
	switch {
	case g.Status != game.StatusActive:
		return "", domain.Invalid(map[string]string{"context": "the game is " + g.Status + ": a tip is announced only in the chat of an active game"})
	case !g.Plays:
		return "", domain.Invalid(map[string]string{"context": "neither you nor the recipient plays this game: a tip is announced only in the chat of a game one of you plays"})
	}
	return id, nil
}

// Result is the answer to a broadcast.
type Result struct {
	Signature   string        `json:"signature"`
	ToUserID    string        `json:"toUserId"`
	AmountMinor int64         `json:"amountMinor"`
	Message     *chat.Message `json:"message" doc:"the system message that announced the tip in its chat; null for a tip without a context"`
}

// Broadcast submits the signed tip (see money.Service.Submit) and answers
// once it is confirmed. The same intent twice moves money once and answers
// the same. Errors: those of Submit; NOT_FOUND for an intent that is not
// one of the user's tips.
func (s *Service) Broadcast(ctx context.Context, userID, intentID, signed string) (Result, error) {
	id, ok := domain.CanonicalID(intentID)
	if !ok {
		return Result{}, domain.Errorf(domain.CodeNotFound, "no such intent")
	}
	var toID string
	err := s.db.NewSelect().Table("tip_intents").Column("to_user_id").Where("intent_id = ?", id).Scan(ctx, &toID)
	if errors.Is(err, sql.ErrNoRows) {
		return Result{}, domain.Errorf(domain.CodeNotFound, "no such tip intent")
	} else if err != nil {
		return Result{}, fmt.Errorf("read tip intent %s: %w", id, err)
	}
	r, err := s.money.SubmitFor(ctx, userID, id, signed, toID, KindTip)
	if err != nil {
		return Result{}, err
	}
	res := Result{Signature: r.Signature, ToUserID: toID, AmountMinor: r.AmountMinor}
	var msg []byte
	if err := s.db.NewSelect().Table("tips").Column("message").Where("signature = ?", r.Signature).Scan(ctx, &msg); err != nil {
		return res, fmt.Errorf("read tip %s: %w", r.Signature, err)
	}
	if len(msg) > 0 {
		res.Message = &chat.Message{}
		d := json.NewDecoder(bytes.NewReader(msg))
		d.UseNumber() // amounts stay integers
		if err := d.Decode(res.Message); err != nil {
			return res, fmt.Errorf("decode the message of tip %s: %w", r.Signature, err)
		}
	}
	return res, nil
}

// Notice is the data of a tip notification.
type Notice struct {
	From        chat.UserRef `json:"from"`
	AmountMinor int64        `json:"amountMinor"`
	Signature   string       `json:"signature"`
	Context     *Context     `json:"context" doc:"where the tip was given; null for none"`
}

// Confirm records a confirmed tip in the same transaction as the intent's
// confirmation: the tip row, both wallet histories, the recipient's
// notification, the feed entry and achievement, and the system message in
// the tip's chat.
func (s *Service) Confirm(ctx context.Context, tx db.Tx, in money.Intent) error {
	sig, now := *in.Signature, s.now()
	var ti struct {
		ToUserID    string  `bun:"to_user_id"`
		ContextType *string `bun:"context_type"`
		ContextID   *string `bun:"context_id"`
	}
	if err := tx.NewSelect().Table("tip_intents").Column("to_user_id", "context_type", "context_id").
		Where("intent_id = ?", in.ID).Scan(ctx, &ti); err != nil {
		return fmt.Errorf("read tip intent %s: %w", in.ID, err)
	}
	var fromName, toName string
	if err := tx.NewSelect().Table("users").Column("username").Where("id = ?", in.UserID).Scan(ctx, &fromName); err != nil {
		return fmt.Errorf("read the tipper %s: %w", in.UserID, err)
	}
	if err := tx.NewSelect().Table("users").Column("username").Where("id = ?", ti.ToUserID).Scan(ctx, &toName); err != nil {
		return fmt.Errorf("read the recipient %s: %w", ti.ToUserID, err)
	}
	if err := money.RecordActivity(ctx, tx, money.Activity{UserID: in.UserID, Kind: money.KindTipSent, AmountMinor: -in.AmountMinor,
		Counterparty: toName, Signature: sig}, now); err != nil {
		return err
	}
	if err := money.RecordActivity(ctx, tx, money.Activity{UserID: ti.ToUserID, Kind: money.KindTipReceived, AmountMinor: in.AmountMinor,
		Counterparty: fromName, Signature: sig}, now); err != nil {
		return err
	}
	var where *Context
	var msg *chat.Message
	if ti.ContextType != nil {
		where = &Context{Type: *ti.ContextType, ID: *ti.ContextID}
		text := Announcement(fromName, toName, in.AmountMinor)
		meta := map[string]any{"kind": "tip", "amountMinor": in.AmountMinor, "userId": in.UserID, "toUserId": ti.ToUserID, "signature": sig}
		m, err := s.announce(ctx, tx, *where, in.UserID, ti.ToUserID, text, meta, now)
		if err != nil {
			return err
		}
		msg = &m
	}
	var raw []byte
	if msg != nil {
		var err error
		if raw, err = json.Marshal(msg); err != nil {
			return fmt.Errorf("encode the message of tip %s: %w", sig, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO tips (signature, intent_id, from_user_id, to_user_id, amount_minor, context_type, context_id, message, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, sig, in.ID, in.UserID, ti.ToUserID, in.AmountMinor, ti.ContextType, ti.ContextID, jsonOrNull(raw), now); err != nil {
		return fmt.Errorf("record tip %s: %w", sig, err)
	}
	if err := s.notify.Send(ctx, tx, ti.ToUserID, notify.Tip, Notice{From: chat.UserRef{UserID: in.UserID, Username: fromName},
		AmountMinor: in.AmountMinor, Signature: sig, Context: where}); err != nil {
		return err
	}
	if s.recorder == nil {
		return nil
	}
	return s.recorder.TipConfirmed(ctx, tx, in.UserID, ti.ToUserID, in.AmountMinor)
}

// announce posts the system message of a tip into its chat: a game's chat
// whatever its status (the money moved either way), or the conversation.
func (s *Service) announce(ctx context.Context, tx db.Tx, where Context, fromID, toID, text string, meta map[string]any, now time.Time) (chat.Message, error) {
	if where.Type == chat.ContextGame {
		return s.chat.PostSystem(ctx, tx, where.ID, text, meta, now)
	}
	return s.chat.PostDirectSystem(ctx, tx, fromID, toID, text, meta, now)
}

// Announcement is the sentence that announces a tip in its chat.
func Announcement(fromName, toName string, amount int64) string {
	return fromName + " tipped " + toName + " " + money.FormatUSDC(amount) + " USDC"
}

func jsonOrNull(raw []byte) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}
