// Package settlement pays out every finished game: its whole pot (stakes
// and donations) exactly once, with the escrow swept to the platform's
// vault after a win and donations refunded on chain after a draw or
// cancellation, and its bets. It also takes what a game's pot and bets
// hold: donations from spectators' wallets into the game's on-chain
// escrow, and bets. A donation or bet that cannot join the game when it
// lands is refunded on chain to the wallet that paid it, never to the
// platform balance, where it would be a deposit past the deposit limit.
package settlement

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/db"
	"wager/domain"
	"wager/domain/chat"
	"wager/domain/eventlog"
	"wager/domain/game"
	"wager/domain/money"
	"wager/domain/referrals"
	"wager/domain/users"
)

// Donation limits in USDC minor units (MaxDonation bounds bets too).
const (
	MinDonation = 10_000 // 0.01 USDC
	MaxDonation = 10_000 * 1_000_000
)

// KindDonation is the intent kind of a donation.
const KindDonation = "donation"

// Service runs donations and settlement.
type Service struct {
	db               *bun.DB
	events           *eventlog.Log
	games            *game.Service
	money            *money.Service
	chat             *chat.Service
	keys             *chain.Keys
	now              domain.Clock
	log              *slog.Logger
	links            Links
	donationRecorder DonationRecorder
	referrals        *referrals.Service
	betRecorder      BetRecorder
	notify           Notifier
	protect          Protection
}

// Deps are the Service's optional collaborators.
type Deps struct {
	// DonationRecorder is told of every donation into a live pot (nil: nobody).
	DonationRecorder DonationRecorder
	// Referrals pays referral rewards out of staked games' fees (nil: none).
	Referrals *referrals.Service
	// BetRecorder is told of every bet placed and won (nil: nobody).
	BetRecorder BetRecorder
	// Notify tells bettors their bets are settled (nil: nobody).
	Notify Notifier
	// Protect answers player protection's rules of bets and donations
	// (nil: none).
	Protect Protection
}

// Protection is what player protection says about money a spectator puts
// in: whether they may bet, or donate, now.
type Protection interface {
	CheckBet(ctx context.Context, idb bun.IDB, userID string, amount int64, intentID string) error
	CheckDonation(ctx context.Context, idb bun.IDB, userID string) error
}

// Links is what the integrity rules say about bets: who may not bet on
// whose game, and how much a pool may hold.
type Links interface {
	// CheckNotLinked refuses (LINKED_TO_PLAYER) an account linked to one
	// of players.
	CheckNotLinked(ctx context.Context, idb bun.IDB, userID string, players []string) error
	// PoolCap is the most one player's pool may hold when the player pot
	// is playerPot.
	PoolCap(playerPot int64) int64
}

// New returns a Service; ConfirmDonation and ConfirmBet are what confirm
// its intents, and links answers who may bet how much.
func New(bdb *bun.DB, events *eventlog.Log, games *game.Service, m *money.Service, c *chat.Service, keys *chain.Keys,
	links Links, now domain.Clock, log *slog.Logger, d Deps) *Service {
	return &Service{db: bdb, events: events, games: games, money: m, chat: c, keys: keys, links: links, now: now, log: log,
		donationRecorder: d.DonationRecorder, referrals: d.Referrals, betRecorder: d.BetRecorder, notify: d.Notify, protect: d.Protect}
}

// EscrowAddress is the address of a game's escrow.
func (s *Service) EscrowAddress(gameID string) solana.PublicKey {
	return s.keys.Escrow(gameID).PublicKey()
}

// PrepareDonation prepares a USDC transfer from the spectator's wallet into
// the game's escrow. Errors: NOT_FOUND, GAME_NOT_ACTIVE, FORBIDDEN (players
// cannot donate to their own game), VALIDATION_ERROR (amount outside the
// limits), player protection's refusals (see Protection),
// INSUFFICIENT_FUNDS (the wallet holds less on chain).
func (s *Service) PrepareDonation(ctx context.Context, u users.User, gameID string, amount int64) (money.Prepared, error) {
	meta, err := s.games.Metadata(ctx, gameID)
	if err != nil {
		return money.Prepared{}, err
	}
	if meta.Status != game.StatusActive {
		return money.Prepared{}, domain.Errorf(domain.CodeGameNotActive, "donations close when the game ends; it is %s", meta.Status)
	}
	for _, p := range meta.Players {
		if p.UserID == u.ID {
			return money.Prepared{}, domain.Errorf(domain.CodeForbidden, "players cannot donate to their own game")
		}
	}
	if amount < MinDonation || amount > MaxDonation {
		return money.Prepared{}, domain.Invalid(map[string]string{"amountMinor": "must be from " + money.USDC(MinDonation) + " to " +
			money.USDC(MaxDonation)})
	}
	if s.protect != nil {
		if err := s.protect.CheckDonation(ctx, s.db, u.ID); err != nil {
			return money.Prepared{}, err
		}
	}
	return s.money.Prepare(ctx, money.PrepareSpec{Kind: KindDonation, User: u, To: s.EscrowAddress(gameID),
		Amount: amount, Reference: gameID})
}

// DonationResult is the answer to a donation submit.
type DonationResult struct {
	Signature     string `json:"signature"`
	EscrowAddress string `json:"escrowAddress"`
	AmountMinor   int64  `json:"amountMinor"`
	GameID        string `json:"gameId"`
	Refunded      bool   `json:"refunded" doc:"true when the game had ended before the donation landed: it is not in the pot and is sent back on chain to the wallet that paid it, never credited to the platform balance (while that wallet has no USDC token account, the refund waits for one)"`
}

// SubmitDonation submits the signed donation (see money.Service.Submit)
// and answers once it is confirmed and in the pot. The same intent twice
// moves money once and answers the same result.
func (s *Service) SubmitDonation(ctx context.Context, userID, gameID, intentID, signed string) (DonationResult, error) {
	r, err := s.money.SubmitFor(ctx, userID, intentID, signed, gameID, KindDonation)
	if err != nil {
		return DonationResult{}, err
	}
	res := DonationResult{Signature: r.Signature, EscrowAddress: s.EscrowAddress(gameID).String(),
		AmountMinor: r.AmountMinor, GameID: gameID}
	if err := s.db.NewSelect().Table("donations").Column("late").Where("signature = ?", r.Signature).Scan(ctx, &res.Refunded); err != nil {
		return res, fmt.Errorf("read donation %s: %w", r.Signature, err)
	}
	return res, nil
}

// Events are this package's room events by name, each with its data type
// (see rules.Events).
var Events = map[domain.EventName]any{domain.EventDonation: Donated{}, domain.EventPot: Pot{}, domain.EventBet: BetPlaced{},
	domain.EventSettlementTransfer: TransferSent{}}

// Donated is the data of game:donation.
type Donated struct {
	Donor       chat.UserRef `json:"donor"`
	AmountMinor int64        `json:"amountMinor"`
	Signature   string       `json:"signature"`
}

// ConfirmDonation records a confirmed donation in the same transaction as
// the intent's confirmation: the ledger entry into the spectator pot, the
// donation row, the line in the donor's wallet history, game:donation and
// game:pot, and the system chat message.
// A donation that lands after the game ended, or after its donor took a
// time-out or excluded themselves, is refunded on chain to the wallet that
// paid it (see signTransfer).
func (s *Service) ConfirmDonation(ctx context.Context, tx db.Tx, in money.Intent) error {
	gameID, sig, now := in.Reference, *in.Signature, s.now()
	var status string
	if err := tx.NewSelect().Table("games").Column("status").Where("id = ?", gameID).For("UPDATE").Scan(ctx, &status); err != nil {
		return err
	}
	if _, err := money.Post(ctx, tx, s.events, money.Posting{Kind: KindDonation, Reference: sig, Memo: "donation to game " + gameID,
		Entries: []money.Entry{{Account: money.SpectatorPot(gameID), Amount: in.AmountMinor},
			{Account: money.Escrow(gameID), Amount: -in.AmountMinor}}}); err != nil {
		return err
	}
	late := status != game.StatusActive
	if !late && s.protect != nil {
		// Weighed again as it lands, like a bet: a donor who took a time-out
		// since it was sent gets it back on chain.
		err := s.protect.CheckDonation(ctx, tx, in.UserID)
		var refused *domain.Error
		if late = errors.As(err, &refused); !late && err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO donations (signature, game_id, donor_id, amount_minor, created_at, late) VALUES (?, ?, ?, ?, ?, ?)",
		sig, gameID, in.UserID, in.AmountMinor, now, late); err != nil {
		return err
	}
	// The USDC left the donor's wallet, not their platform balance, but it
	// is their money: the history shows it, late or not (a late one's
	// refund follows as its own line).
	if err := money.RecordActivity(ctx, tx, money.Activity{UserID: in.UserID, Kind: money.KindDonation, AmountMinor: -in.AmountMinor,
		Counterparty: "game " + gameID, Signature: sig, GameID: gameID}, now); err != nil {
		return err
	}
	if late {
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
	pot, err := potOf(ctx, tx, gameID)
	if err != nil {
		return err
	}
	if _, err := s.events.Append(ctx, tx, domain.GameStreamOf(gameID), now,
		domain.Event{Name: domain.EventDonation, Data: Donated{Donor: chat.UserRef{UserID: in.UserID, Username: username},
			AmountMinor: in.AmountMinor, Signature: sig}},
		domain.Event{Name: domain.EventPot, Data: pot}); err != nil {
		return err
	}
	if _, err = s.chat.PostSystem(ctx, tx, gameID, username+" donated "+money.FormatUSDC(in.AmountMinor)+" USDC to the game",
		map[string]any{"kind": "donation", "amountMinor": in.AmountMinor, "userId": in.UserID, "signature": sig}, now); err != nil {
		return err
	}
	if s.donationRecorder == nil {
		return nil
	}
	return s.donationRecorder.DonationConfirmed(ctx, tx, in.UserID, gameID, in.AmountMinor)
}

// DonationRecorder learns of every donation that went into a live game's
// pot, in the transaction that confirms it (the activity feed and the
// donor's achievements).
type DonationRecorder interface {
	DonationConfirmed(ctx context.Context, tx db.Tx, donorID, gameID string, amount int64) error
}

// Pot is a game's pot.
type Pot struct {
	PlayerPotMinor    int64 `json:"playerPotMinor"`
	SpectatorPotMinor int64 `json:"spectatorPotMinor"`
	TotalMinor        int64 `json:"totalMinor"`
	FeeBps            int   `json:"feeBps"`
	FeeMinor          int64 `json:"feeMinor" doc:"the fee if the game ended now with a winner"`
	WinnerGetsMinor   int64 `json:"winnerGetsMinor" doc:"what the winner would receive if the game ended now"`
}

func potOf(ctx context.Context, idb bun.IDB, gameID string) (Pot, error) {
	var stake int64
	var players int
	err := idb.QueryRowContext(ctx, `SELECT g.stake_minor, (SELECT count(*) FROM game_players p WHERE p.game_id = g.id)
		FROM games g WHERE g.id = ?`, gameID).Scan(&stake, &players)
	if errors.Is(err, sql.ErrNoRows) {
		return Pot{}, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	if err != nil {
		return Pot{}, err
	}
	var donated int64
	if err := idb.QueryRowContext(ctx, "SELECT coalesce(sum(amount_minor), 0) FROM donations WHERE game_id = ? AND NOT late", gameID).Scan(&donated); err != nil {
		return Pot{}, err
	}
	return potWith(stake*int64(players), donated), nil
}

// PotFor returns the pot of a game whose metadata the caller has read.
func (s *Service) PotFor(ctx context.Context, m game.Meta) (Pot, error) {
	var donated int64
	if err := s.db.QueryRowContext(ctx, "SELECT coalesce(sum(amount_minor), 0) FROM donations WHERE game_id = ? AND NOT late",
		m.GameID).Scan(&donated); err != nil {
		return Pot{}, fmt.Errorf("sum the donations of game %s: %w", m.GameID, err)
	}
	return potWith(m.StakeMinor*int64(len(m.Players)), donated), nil
}

func potWith(playerPot, donated int64) Pot {
	p := Pot{PlayerPotMinor: playerPot, SpectatorPotMinor: donated, FeeBps: game.FeeBps}
	p.TotalMinor = p.PlayerPotMinor + p.SpectatorPotMinor
	p.FeeMinor, p.WinnerGetsMinor = game.Payout(p.TotalMinor)
	return p
}

// PotOf returns a game's pot. NOT_FOUND when there is no such game.
func (s *Service) PotOf(ctx context.Context, gameID string) (Pot, error) {
	m, err := s.games.Metadata(ctx, gameID)
	if err != nil {
		return Pot{}, err
	}
	return s.PotFor(ctx, m)
}

// Donation is one donation as lists show it.
type Donation struct {
	Signature   string    `json:"signature" bun:"signature"`
	DonorID     string    `json:"donorId" bun:"donor_id"`
	Username    string    `json:"username" bun:"username"`
	AmountMinor int64     `json:"amountMinor" bun:"amount_minor"`
	CreatedAt   time.Time `json:"createdAt" bun:"created_at"`
	Refunded    bool      `json:"refunded" bun:"refunded" doc:"true once its refund is queued: it goes back on chain to the wallet that paid it (the game ended in a draw or was cancelled, or the donation landed after it ended); the refund's transfer and its status are in the game's settlement"`
}

// Donations lists a game's donations, newest first: at most limit of
// them, older than the donation with signature before when it is set
// (VALIDATION_ERROR when that is not one of the game's donations).
func (s *Service) Donations(ctx context.Context, gameID string, limit int, before string) ([]Donation, error) {
	if _, err := s.games.Metadata(ctx, gameID); err != nil {
		return nil, err
	}
	q := s.db.NewSelect().TableExpr("donations AS d").Join("JOIN users AS u ON u.id = d.donor_id").
		ColumnExpr("d.signature, d.donor_id, u.username, d.amount_minor, d.created_at").
		ColumnExpr("EXISTS (SELECT 1 FROM settlement_transfers AS st WHERE st.refund_of = d.signature) AS refunded").
		Where("d.game_id = ?", gameID).OrderExpr("d.created_at DESC, d.signature DESC").Limit(int64(limit))
	if before != "" {
		notOne := domain.Invalid(map[string]string{"before": "must be the signature of one of this game's donations"})
		if _, err := solana.SignatureFromBase58(before); err != nil {
			return nil, notOne
		}
		var at time.Time
		err := s.db.NewSelect().Table("donations").Column("created_at").
			Where("game_id = ? AND signature = ?", gameID, before).Scan(ctx, &at)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notOne
		} else if err != nil {
			return nil, err
		}
		q = q.Where("(d.created_at, d.signature) < (?, ?)", at, before)
	}
	out := []Donation{}
	if err := q.Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("list the donations of game %s: %w", gameID, err)
	}
	return out, nil
}
