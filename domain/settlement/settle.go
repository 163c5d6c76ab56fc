package settlement

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
)

// StartSettle pays out a finished game's whole pot once, in the
// transaction that finishes the game, in two steps: it adds what the
// settlement reads to reads, which the game's end sends with its other
// reads, and returns what pays once they have run. After a win, total =
// player pot + spectator pot, fee = floor(total / 100) to the treasury,
// and the winner gets the rest on their platform balance; the donations'
// USDC is then swept on chain from the escrow to the vault. After a draw
// or a cancellation, stakes go back to the players and each donation goes
// back on chain to the wallet that paid it (see signTransfer). After a win
// of a staked game, the players' referrers are paid their rewards out of
// the fee (see referrals.Service.PayRewards). The game's bets are settled
// in the same transaction (see settleBets and BetPayouts), or held for
// review when review names why (see SettleHeldBets). A second settlement
// of the same game (another instance, a retry) changes nothing and
// answers the first. Paying a free game whose pot is empty sends no
// statement of its own: its record and its players' history are queued
// with the transaction's writes (db.Tx.Later). The games' settlement,
// the integrity reviews' ReadEnd, calls it.
func (s *Service) StartSettle(tx db.Tx, g game.Game, players []string, o rules.Outcome, reads *db.Reads) func(ctx context.Context, review string) (game.Settlement, error) {
	var prior []byte
	var donated int64
	var betOn bool
	var refunds []struct {
		Signature string `json:"signature"`
		Amount    int64  `json:"amount"`
		Wallet    string `json:"wallet"`
	}
	reads.Column(&prior, "SELECT result FROM settlements WHERE game_id = ?", g.ID)
	reads.Column(&donated, "SELECT coalesce(sum(amount_minor), 0) FROM donations WHERE game_id = ? AND NOT late", g.ID)
	reads.Column(&betOn, "SELECT EXISTS (SELECT 1 FROM bets WHERE game_id = ? AND status = ? AND NOT late)", g.ID, BetOpen)
	win := o.Winner != ""
	if !win {
		// After a draw or a cancellation each donation in the pot goes back
		// on chain (a late one is on its way back already).
		reads.Column(db.JSON(&refunds), `SELECT json_agg(json_build_object('signature', d.signature, 'amount', d.amount_minor, 'wallet', u.wallet_address))
			FROM donations AS d JOIN users AS u ON u.id = d.donor_id WHERE d.game_id = ? AND NOT d.late`, g.ID)
	}
	return func(ctx context.Context, review string) (game.Settlement, error) {
		var out game.Settlement
		if prior != nil {
			if err := json.Unmarshal(prior, &out); err != nil {
				return out, fmt.Errorf("read the settlement of game %s: %w", g.ID, err)
			}
			return out, nil
		}
		p := potWith(g.StakeMinor*int64(len(players)), donated)
		out = game.Settlement{PotMinor: p.TotalMinor, PlayerPotMinor: p.PlayerPotMinor, SpectatorPotMinor: p.SpectatorPotMinor,
			EscrowAddress: s.EscrowAddress(g.ID).String(), ReviewHeld: review != "", ReviewReason: review}
		entries := settlementEntries(g.ID, g.StakeMinor, players, o.Winner, p)
		if win && p.TotalMinor > 0 {
			out.FeeMinor, out.PayoutMinor = game.Payout(p.TotalMinor)
		}
		if len(entries) > 0 {
			if _, err := money.Post(ctx, tx, s.events, money.Posting{Kind: "settlement", Reference: "settle:" + g.ID, Entries: entries, At: s.now()}); err != nil {
				return out, fmt.Errorf("post the settlement of game %s: %w", g.ID, err)
			}
		}
		// The players' referrers earn their part of a staked game's fee out of
		// the treasury's, in this same transaction: the books never show a fee
		// without its rewards.
		if win && g.StakeMinor > 0 && out.FeeMinor > 0 && s.referrals != nil {
			if _, err := s.referrals.PayRewards(ctx, tx, g.ID, players, out.FeeMinor); err != nil {
				return out, err
			}
		}
		// The players' wallet history: winnings, or stakes back.
		for _, e := range entries {
			if uid, ok := strings.CutPrefix(e.Account, "user:"); ok && strings.HasSuffix(uid, ":available") {
				kind := money.KindWinnings
				if !win {
					kind = money.KindStakeRefund
				}
				if err := money.RecordActivityLater(tx, money.Activity{UserID: strings.TrimSuffix(uid, ":available"), Kind: kind,
					AmountMinor: e.Amount, Counterparty: "game " + g.ID, GameID: g.ID}, s.now()); err != nil {
					return out, err
				}
			}
		}
		// The chain side follows the books, through transfers any instance
		// sends and confirms (ProcessTransfers).
		if win && p.SpectatorPotMinor > 0 {
			if err := s.queueTransfer(tx, g.ID, KindSweep, s.money.DepositAddress().String(), p.SpectatorPotMinor, "", &out.Queued); err != nil {
				return out, err
			}
		}
		for _, d := range refunds {
			if err := s.queueTransfer(tx, g.ID, KindRefund, d.Wallet, d.Amount, d.Signature, &out.Queued); err != nil {
				return out, err
			}
		}
		switch {
		case betOn && review != "":
			if err := s.holdBets(ctx, tx, g.ID); err != nil {
				return out, err
			}
		case betOn:
			if err := s.settleBets(ctx, tx, g.ID, o.Winner, BetOpen, &out.Queued); err != nil {
				return out, err
			}
		}
		result, err := json.Marshal(out)
		if err != nil {
			return out, err
		}
		if err := tx.Later("INSERT INTO settlements (game_id, result, created_at) VALUES (?, ?, ?)",
			g.ID, string(result), s.now()); err != nil {
			return out, fmt.Errorf("record the settlement of game %s: %w", g.ID, err)
		}
		return out, nil
	}
}

// settlementEntries are the ledger entries that pay out a finished game:
// each player's stake leaves their locked balance; after a win (winner
// set) the winner gets the whole pot less the fee, the treasury the fee,
// and the spectator pot is emptied into it; after a draw or cancellation
// the stakes go back to the players' available balances (donations go
// back on chain, by their own transfers).
func settlementEntries(gameID string, stake int64, players []string, winner string, p Pot) []money.Entry {
	var entries []money.Entry
	for _, pl := range players {
		if stake == 0 {
			break
		}
		entries = append(entries, money.Entry{Account: money.Locked(pl), Amount: -stake})
		if winner == "" {
			entries = append(entries, money.Entry{Account: money.Available(pl), Amount: stake})
		}
	}
	if winner != "" && p.TotalMinor > 0 {
		fee, payout := game.Payout(p.TotalMinor)
		if p.SpectatorPotMinor > 0 {
			entries = append(entries, money.Entry{Account: money.SpectatorPot(gameID), Amount: -p.SpectatorPotMinor})
		}
		entries = append(entries, money.Entry{Account: money.Available(winner), Amount: payout})
		if fee > 0 {
			entries = append(entries, money.Entry{Account: money.Treasury, Amount: fee})
		}
	}
	return entries
}

// Kinds of settlement transfer.
const (
	// KindSweep moves a won game's donations, or its bets, from the escrow
	// to the vault.
	KindSweep = "sweep"
	// KindRefund sends a donation, or a bet refused when it landed, back
	// from the escrow to the wallet that paid it; it waits while that
	// wallet has no USDC token account (see signTransfer).
	KindRefund = "refund"
	// KindRefundToBalance was a refund sent to the vault and credited to
	// the donor's platform balance. None is made any more (a refund to the
	// balance is a deposit no deposit limit weighs); one signed before
	// may still land, and is recorded as it was signed.
	KindRefundToBalance = "refund_to_balance"
)

// refundWait is how long a refund to a wallet without a USDC token account
// waits before it looks for the account again.
const refundWait = 5 * time.Minute

// Transfer is one on-chain transfer of a settlement.
type Transfer struct {
	bun.BaseModel `bun:"table:settlement_transfers"`

	ID          string    `bun:"id,pk,type:uuid" json:"id"`
	GameID      string    `bun:"game_id,type:uuid" json:"gameId"`
	Kind        string    `bun:"kind" json:"kind" enum:"sweep,refund,refund_to_balance" doc:"sweep (escrow to vault) or refund (escrow to the wallet that paid a donation, or a bet refused when it landed; never to a platform balance: while that wallet has no USDC token account the refund stays pending, is retried every few minutes and is sent once the wallet has one); refund_to_balance only on refunds made before refunds waited for the wallet's account"`
	ToAddress   string    `bun:"to_address" json:"toAddress" doc:"the wallet whose USDC token account receives the transfer"`
	AmountMinor int64     `bun:"amount_minor" json:"amountMinor"`
	RefundOf    *string   `bun:"refund_of" json:"-"` // the signature of the donation or bet a refund sends back
	Status      string    `bun:"status" json:"status" enum:"pending,sent,confirmed" doc:"pending, sent or confirmed (a refund waiting for its wallet's USDC token account is pending)"`
	Signature   *string   `bun:"signature" json:"signature"`
	Raw         []byte    `bun:"raw" json:"-"`
	LastValid   *int64    `bun:"last_valid_block_height" json:"-"` // the last block height Raw can land at
	Error       string    `bun:"error" json:"-"`
	CreatedAt   time.Time `bun:"created_at" json:"createdAt"`
	UpdatedAt   time.Time `bun:"updated_at" json:"updatedAt"`
}

// queueTransfer queues an on-chain transfer of a game's escrow, and adds
// it to told unless that is nil. A refund names in refundOf the signature
// of the donation or bet it sends back.
func (s *Service) queueTransfer(tx db.Tx, gameID, kind, to string, amount int64, refundOf string,
	told *[]game.SettlementTransfer) error {
	now := s.now()
	t := Transfer{ID: uuid.NewString(), GameID: gameID, Kind: kind, ToAddress: to, AmountMinor: amount,
		Status: "pending", CreatedAt: now, UpdatedAt: now}
	if refundOf != "" {
		t.RefundOf = &refundOf
	}
	if err := tx.Later(`INSERT INTO settlement_transfers (id, game_id, kind, to_address, amount_minor, refund_of, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, t.ID, t.GameID, t.Kind, t.ToAddress, t.AmountMinor, t.RefundOf, t.Status, t.CreatedAt, t.UpdatedAt); err != nil {
		return fmt.Errorf("queue a %s transfer of game %s: %w", kind, gameID, err)
	}
	if told != nil {
		*told = append(*told, game.SettlementTransfer{ID: t.ID, Kind: kind, ToAddress: to, AmountMinor: amount})
	}
	return nil
}

// Transfers lists a game's settlement transfers.
func (s *Service) Transfers(ctx context.Context, gameID string) ([]Transfer, error) {
	out := []Transfer{}
	if err := s.db.NewSelect().Model(&out).Where("game_id = ?", gameID).Order("created_at").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list the settlement transfers of game %s: %w", gameID, err)
	}
	return out, nil
}

// TransferLease is how long a claimed transfer is left to the worker that
// claimed it before another may take it over.
const TransferLease = time.Minute

// TransferSent is the data of game:settlement:transfer.
type TransferSent struct {
	ID          string `json:"id" doc:"the transfer's id, as game:completed listed it when the settlement queued it"`
	Kind        string `json:"kind" enum:"sweep,refund,refund_to_balance" doc:"sweep or refund, as the settlement queued it; refund_to_balance only for a refund signed before refunds waited for the wallet's account"`
	Signature   string `json:"signature"`
	AmountMinor int64  `json:"amountMinor"`
	ToAddress   string `json:"toAddress"`
}

// ProcessTransfers signs, sends and confirms due settlement transfers, one
// at a time (a refund whose wallet has no USDC token account waits; see
// signTransfer). Each is claimed for TransferLease in a short transaction (FOR
// UPDATE SKIP LOCKED, so instances share the work); the chain is called
// outside any transaction, and what it answered is recorded in another
// short one that checks the row is still as the worker left it. A
// transfer's signed bytes are committed before they are ever sent, so after
// a crash the same transaction is sent again (never a second one), and its
// ledger entry is written once, keyed by its signature. It returns how
// many transfers it confirmed; one that cannot be confirmed yet is retried
// on a later run.
func (s *Service) ProcessTransfers(ctx context.Context) (int, error) {
	done := 0
	for ctx.Err() == nil {
		t, ok, err := s.claimTransfer(ctx)
		if err != nil || !ok {
			return done, err
		}
		confirmed, err := s.seeThrough(ctx, &t)
		if err != nil {
			return done, err
		}
		if confirmed {
			done++
		}
	}
	return done, ctx.Err()
}

// transferGrace is how long a claimed transfer may still take once its
// worker is told to stop.
const transferGrace = 5 * time.Second

// seeThrough signs (if need be), sends and records a claimed transfer. A
// worker told to stop (a shutdown) still finishes it, for at most
// transferGrace: left sent but unrecorded, the transfer would wait out its
// lease, and the books would show the escrow's USDC gone without its
// ledger entry until then.
func (s *Service) seeThrough(ctx context.Context, t *Transfer) (bool, error) {
	work, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(transferGrace, stop) })()
	if t.Raw == nil {
		signed, err := s.signTransfer(work, t)
		if err != nil {
			// Most often the RPC did not answer: try again in a round, not
			// at the end of the lease.
			_, rerr := s.db.NewUpdate().Model((*Transfer)(nil)).Set("updated_at = ?", s.now().Add(chain.DefaultResendEvery)).
				Where("id = ? AND raw IS NULL", t.ID).Exec(work)
			return false, errors.Join(fmt.Errorf("sign settlement transfer %s: %w", t.ID, err), rerr)
		}
		if !signed {
			return false, nil
		}
	}
	confirmed, err := s.sendTransfer(work, t)
	if err != nil {
		return false, fmt.Errorf("send settlement transfer %s: %w", t.ID, err)
	}
	return confirmed, nil
}

// TransferWorkers is how many transfers an instance sees through at once:
// each may wait for the chain for up to half a minute, and a queue taken
// one at a time falls behind the games ending (each claim is leased, so
// two workers never take the same transfer).
const TransferWorkers = 8

// RunTransfers claims due settlement transfers every interval and sees
// each through in a worker of its own, at most TransferWorkers at once,
// until ctx is done; it returns once its workers have. An idle instance
// asks the database once an interval.
func (s *Service) RunTransfers(ctx context.Context, interval time.Duration) {
	busy := make(chan struct{}, TransferWorkers)
	var wg sync.WaitGroup
	defer wg.Wait()
	domain.Every(ctx, interval, s.log, "settlement transfers", func(ctx context.Context) error {
		for {
			select {
			case busy <- struct{}{}:
			default:
				return nil // every worker is busy: the next round claims more
			}
			t, ok, err := s.claimTransfer(ctx)
			if err != nil || !ok {
				<-busy
				return err
			}
			wg.Go(func() {
				defer func() { <-busy }()
				if _, err := s.seeThrough(ctx, &t); err != nil {
					s.log.Warn("settlement transfer", "transfer", t.ID, "err", err)
				}
			})
		}
	})
}

// claimTransfer takes the oldest due transfer for TransferLease.
func (s *Service) claimTransfer(ctx context.Context) (Transfer, bool, error) {
	var t Transfer
	claimed := false
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		now := s.now()
		err := tx.NewSelect().Model(&t).Where("status <> 'confirmed' AND updated_at <= ?", now).
			Order("created_at").Limit(1).For("UPDATE SKIP LOCKED").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		t.UpdatedAt, claimed = now.Add(TransferLease), true
		_, err = tx.NewUpdate().Model(&t).Column("updated_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return t, false, fmt.Errorf("claim a settlement transfer: %w", err)
	}
	return t, claimed, nil
}

// signTransfer builds and signs a transfer from the game's escrow and
// stores it, unless another worker signed it first. A refund goes to the
// wallet that paid the money, and only once that wallet's USDC token
// account exists: the transaction never opens it, since were the platform
// to pay that rent, a payer could close the account after each refund and
// collect the rent, again and again. Nor is the refund ever credited to
// the platform balance instead, which would be a deposit past the payer's
// deposit limit. So while the account is missing the refund stays
// pending, says why, and is looked at again after refundWait: signTransfer
// reports false. If the payer closes the account after this signing, the
// transfer fails and is signed anew (see sendTransfer), and waits then.
func (s *Service) signTransfer(ctx context.Context, t *Transfer) (bool, error) {
	escrow := s.keys.Escrow(t.GameID)
	client := s.money.Chain()
	spec := chain.Transfer{FeePayer: s.keys.FeePayer().PublicKey(), From: escrow.PublicKey(), Mint: s.money.Mint(),
		Amount: uint64(t.AmountMinor)}
	if t.Kind != KindSweep {
		// A refund_to_balance signed before, whose transaction failed, is
		// now a refund like any other.
		r, err := refundedBy(ctx, s.db, t)
		if err != nil {
			return false, err
		}
		t.Kind, t.ToAddress = KindRefund, r.Wallet
		exists, err := client.AccountExists(ctx, chain.ATA(solana.MustPublicKeyFromBase58(t.ToAddress), s.money.Mint()))
		if err != nil {
			return false, err
		}
		if !exists {
			return false, s.waitForAccount(ctx, t)
		}
		spec.DestinationExists = true
	}
	var err error
	if spec.CloseSource, err = s.lastOfEscrow(ctx, t); err != nil {
		return false, err
	}
	bh, err := client.Blockhash(ctx)
	if err != nil {
		return false, err
	}
	spec.To, spec.Memo, spec.Blockhash = solana.MustPublicKeyFromBase58(t.ToAddress), "wager:"+t.Kind+":"+t.ID, bh.Hash
	stx, err := client.Budgeted(ctx, spec.Build)
	if err != nil {
		return false, err
	}
	if err := chain.SignWith(stx, s.keys.FeePayer(), escrow); err != nil {
		return false, err
	}
	if t.Raw, err = stx.MarshalBinary(); err != nil {
		return false, err
	}
	sig := stx.Signatures[0].String()
	t.Signature, t.Status, t.LastValid = &sig, "sent", new(int64(bh.LastValid))
	res, err := s.db.NewUpdate().Model(t).Column("kind", "to_address", "raw", "last_valid_block_height", "signature", "status").
		Where("id = ? AND raw IS NULL", t.ID).Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, fmt.Errorf("another worker signed it first")
	}
	return true, nil
}

// waitForAccount leaves a refund whose wallet has no USDC token account
// pending, with the reason, until refundWait has passed.
func (s *Service) waitForAccount(ctx context.Context, t *Transfer) error {
	t.Error = "the wallet " + t.ToAddress + " has no USDC token account: the refund waits until it has one " +
		"(the platform does not open it, nor credit the platform balance instead)"
	t.UpdatedAt = s.now().Add(refundWait)
	_, err := s.db.NewUpdate().Model(t).Column("kind", "to_address", "error", "updated_at").
		Where("id = ? AND raw IS NULL", t.ID).Exec(ctx)
	return err
}

// lastOfEscrow reports whether t is the last transfer out of its game's
// escrow: the game is over, no other transfer of it is unconfirmed, and
// t takes all the USDC the escrow holds on chain. Then t also closes the
// escrow's token account, whose rent the fee payer paid when a donation
// or a bet opened it: the rent comes back instead of staying locked in an
// account per game (the price of one donation to a free game would
// otherwise be some 0.002 SOL of the platform's). A donation that lands
// after this check makes the close, and so the transfer, fail: it is
// signed anew (see sendTransfer), and the refund of that donation closes
// the account in its turn.
func (s *Service) lastOfEscrow(ctx context.Context, t *Transfer) (bool, error) {
	var last bool
	if err := s.db.QueryRowContext(ctx, `SELECT g.status IN (?, ?) AND NOT EXISTS (SELECT 1 FROM settlement_transfers AS o
			WHERE o.game_id = g.id AND o.id <> ? AND o.status <> 'confirmed')
		FROM games AS g WHERE g.id = ?`, game.StatusCompleted, game.StatusCancelled, t.ID, t.GameID).Scan(&last); err != nil {
		return false, fmt.Errorf("read whether transfer %s is its escrow's last: %w", t.ID, err)
	}
	if !last {
		return false, nil
	}
	held, err := s.money.Chain().TokenBalance(ctx, s.keys.Escrow(t.GameID).PublicKey(), s.money.Mint())
	if err != nil {
		return false, err
	}
	return held == uint64(t.AmountMinor), nil
}

// sendTransfer sends a signed transfer (again, if need be), waits for its
// confirmation and records it. It reports whether it confirmed; when not,
// it notes why and when to try again.
func (s *Service) sendTransfer(ctx context.Context, t *Transfer) (bool, error) {
	client := s.money.Chain()
	stx, err := solana.TransactionFromBytes(t.Raw)
	if err != nil {
		return false, err
	}
	lastValid, err := s.lastValid(ctx, t)
	if err != nil {
		return false, err
	}
	if outcome, reason, err := client.Drive(ctx, stx, lastValid, 30*time.Second); outcome != chain.Landed {
		// A transfer that failed on chain, or that was not seen before its
		// last valid block height passed, can never succeed with this
		// signature: it is signed anew on the next round (a refund waits
		// for the account then). One that may still land, refused in
		// preflight included (a refund whose payer closed their token
		// account after it was signed, say), is sent again on the next
		// round, until it lands or expires.
		signAnew := outcome == chain.Failed || outcome == chain.Expired
		why := cmp.Or(reason, outcome.String())
		if err != nil {
			why = err.Error()
		}
		s.log.Warn("settlement transfer not confirmed", "transfer", t.ID, "outcome", outcome, "why", why)
		retry := s.db.NewUpdate().Model(t).Set("error = ?", why).Set("updated_at = ?", s.now().Add(5*time.Second))
		if signAnew {
			retry = retry.Set("raw = NULL, signature = NULL, last_valid_block_height = NULL, status = 'pending'")
		}
		_, uerr := retry.Where("id = ? AND signature = ? AND status <> 'confirmed'", t.ID, *t.Signature).Exec(ctx)
		return false, uerr
	}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		var status string
		if err := tx.NewSelect().Model((*Transfer)(nil)).Column("status").Where("id = ?", t.ID).For("UPDATE").Scan(ctx, &status); err != nil {
			return err
		}
		if status == "confirmed" {
			return nil // another worker recorded it
		}
		if err := s.recordTransfer(ctx, tx, t); err != nil {
			return err
		}
		t.Status, t.Error, t.UpdatedAt = "confirmed", "", s.now()
		if _, err := tx.NewUpdate().Model(t).Column("status", "error", "updated_at").WherePK().Exec(ctx); err != nil {
			return err
		}
		_, err := s.events.Append(ctx, tx, domain.GameStreamOf(t.GameID), s.now(), domain.Event{Name: domain.EventSettlementTransfer,
			Data: TransferSent{ID: t.ID, Kind: t.Kind, Signature: *t.Signature, AmountMinor: t.AmountMinor, ToAddress: t.ToAddress}})
		return err
	})
	return err == nil, err
}

// lastValid is the last block height a signed transfer can land at; a
// transfer signed before the height was kept gets a bound from the chain's
// height now, stored so that it does not move.
func (s *Service) lastValid(ctx context.Context, t *Transfer) (uint64, error) {
	if t.LastValid != nil {
		return uint64(*t.LastValid), nil
	}
	h, err := s.money.Chain().LastValidFrom(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := s.db.NewUpdate().Model((*Transfer)(nil)).Set("last_valid_block_height = ?", int64(h)).
		Where("id = ? AND last_valid_block_height IS NULL", t.ID).Exec(ctx); err != nil {
		return 0, fmt.Errorf("store the last valid height of transfer %s: %w", t.ID, err)
	}
	return h, nil
}

// refunded is the money a refund sends back: a donation, or a bet refused
// when it landed, both found by their signature.
type refunded struct {
	Bet    bool   `bun:"bet"`
	Payer  string `bun:"payer"`
	Wallet string `bun:"wallet"` // the payer's wallet, which signed the payment
}

// refundedBy reads what the refund t sends back, and to whom.
func refundedBy(ctx context.Context, idb bun.IDB, t *Transfer) (refunded, error) {
	var r refunded
	if t.RefundOf == nil {
		return r, errors.New(t.Kind + " transfer " + t.ID + " names no donation or bet")
	}
	err := idb.NewRaw(`SELECT p.bet, p.payer, u.wallet_address AS wallet FROM (
			SELECT false AS bet, donor_id AS payer FROM donations WHERE signature = ?0
			UNION ALL SELECT true, bettor_id FROM bets WHERE signature = ?0) AS p
		JOIN users AS u ON u.id = p.payer`, *t.RefundOf).Scan(ctx, &r)
	if err != nil {
		return r, fmt.Errorf("read the payer of %s, which transfer %s refunds: %w", *t.RefundOf, t.ID, err)
	}
	return r, nil
}

// from is the ledger account that held the refunded money: the spectator
// pot, or the bet pool where a refused bet waits for its refund.
func (r refunded) from(gameID string) string {
	if r.Bet {
		return money.BetPool(gameID)
	}
	return money.SpectatorPot(gameID)
}

// activity is the kind of the payer's wallet history line.
func (r refunded) activity() string {
	if r.Bet {
		return money.KindBetRefund
	}
	return money.KindDonationRefund
}

// recordTransfer writes the ledger transaction of a confirmed transfer,
// keyed by its signature: the escrow's USDC left for the vault (a sweep)
// or for the payer's wallet (a refund, out of the account that held the
// donation or bet). A refund gets a line in the payer's wallet history,
// which already shows the money leaving the wallet.
func (s *Service) recordTransfer(ctx context.Context, tx db.Tx, t *Transfer) error {
	amount := t.AmountMinor
	entries := []money.Entry{{Account: money.Escrow(t.GameID), Amount: amount}}
	var r refunded
	if t.Kind != KindSweep {
		var err error
		if r, err = refundedBy(ctx, tx, t); err != nil {
			return err
		}
	}
	switch t.Kind {
	case KindSweep:
		entries = append(entries, money.Entry{Account: money.Vault, Amount: -amount})
	case KindRefund:
		entries = append(entries, money.Entry{Account: r.from(t.GameID), Amount: -amount})
	case KindRefundToBalance: // signed before refunds waited for the account: its USDC went to the vault
		entries = append(entries, money.Entry{Account: money.Vault, Amount: -amount},
			money.Entry{Account: r.from(t.GameID), Amount: -amount},
			money.Entry{Account: money.Available(r.Payer), Amount: amount})
	default:
		return errors.New("settlement transfer " + t.ID + " of unknown kind " + t.Kind)
	}
	posted, err := money.Post(ctx, tx, s.events, money.Posting{Kind: "settlement_" + t.Kind, Reference: *t.Signature, Entries: entries})
	if err != nil || !posted || r.Payer == "" {
		return err
	}
	return money.RecordActivity(ctx, tx, money.Activity{UserID: r.Payer, Kind: r.activity(), AmountMinor: amount,
		Counterparty: "game " + t.GameID, Signature: *t.Signature, GameID: t.GameID}, s.now())
}
