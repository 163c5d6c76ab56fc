package game

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/money"
)

// MaxStake is the largest stake per player (100,000 USDC).
const MaxStake = 100_000 * 1_000_000

// Lobby is a table of one game type and stake that players queue at.
type Lobby struct {
	bun.BaseModel `bun:"table:lobbies"`

	ID         string          `bun:"id,pk,type:uuid" json:"id"`
	GameType   string          `bun:"game_type" json:"gameType" enum:"connect4,rps"`
	StakeMinor int64           `bun:"stake_minor" json:"stakeMinor"`
	Settings   json.RawMessage `bun:"settings,type:jsonb" json:"settings" schema:"GameSettings"`
	CreatedBy  string          `bun:"created_by,type:uuid" json:"createdBy"`
	CreatedAt  time.Time       `bun:"created_at" json:"createdAt"`
	Status     string          `bun:"-" json:"status" enum:"open" doc:"open"`
	Queued     int             `bun:"queued,scanonly" json:"queued" doc:"players waiting in its queue"`
}

// presence is where a user is: one queue or one active game.
type presence struct {
	bun.BaseModel `bun:"table:user_presence"`

	UserID  string    `bun:"user_id,pk,type:uuid"`
	Kind    string    `bun:"kind"`
	LobbyID *string   `bun:"lobby_id,type:uuid"`
	GameID  *string   `bun:"game_id,type:uuid"`
	Since   time.Time `bun:"since"`
	Pos     int64     `bun:"queue_pos,autoincrement"`
}

// checkStake validates a stake per player.
func checkStake(stake int64) error {
	if stake < 0 || stake > MaxStake {
		return domain.Invalid(map[string]string{"stakeMinor": "must be from 0 (a free game) to " + money.USDC(MaxStake)})
	}
	return nil
}

// CreateLobby opens a lobby. Errors: VALIDATION_ERROR for an unknown game
// type, a bad stake or bad settings; player protection's refusals of a
// staked lobby's opener (see Protection).
func (s *Service) CreateLobby(ctx context.Context, userID, gameType string, stake int64, settings json.RawMessage) (Lobby, error) {
	r, err := rulesOf(gameType)
	if err != nil {
		return Lobby{}, err
	}
	if err := checkStake(stake); err != nil {
		return Lobby{}, err
	}
	if err := s.checkStake(ctx, s.db, userID, stake); err != nil {
		return Lobby{}, err
	}
	norm, err := r.ParseSettings(settings)
	if err != nil {
		return Lobby{}, err
	}
	l := Lobby{ID: uuid.NewString(), GameType: gameType, StakeMinor: stake, Settings: norm, CreatedBy: userID,
		CreatedAt: s.now(), Status: "open"}
	if _, err := s.db.NewInsert().Model(&l).Exec(ctx); err != nil {
		return Lobby{}, fmt.Errorf("open a lobby: %w", err)
	}
	return l, nil
}

// Lobbies lists the newest lobbies with their queue lengths.
func (s *Service) Lobbies(ctx context.Context, limit int) ([]Lobby, error) {
	out := []Lobby{}
	err := s.db.NewSelect().Model(&out).
		ColumnExpr("l.*").
		ColumnExpr("(SELECT count(*) FROM user_presence p WHERE p.lobby_id = l.id AND p.kind = 'queue') AS queued").
		ModelTableExpr("lobbies AS l").Order("l.created_at DESC").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list lobbies: %w", err)
	}
	for i := range out {
		out[i].Status = "open"
	}
	return out, nil
}

// JoinResult is the answer to joining a queue.
type JoinResult struct {
	Status string `json:"status" enum:"queued,matched" doc:"queued or matched"`
	GameID string `json:"gameId,omitempty"`
}

// JoinQueue queues the user at a lobby and, when someone is already
// waiting there, matches them in queue order into a new game whose stakes
// are locked in the same transaction. Joining the queue one is already in
// answers "queued" again. Errors: NOT_FOUND, CONFLICT (in another queue or
// an active game), INSUFFICIENT_FUNDS (balance below the stake), player
// protection's refusals of a stake (see Protection). Waiting players whom
// protection now refuses the stake are taken out of the queue and told
// why, like those whose balance no longer covers it.
func (s *Service) JoinQueue(ctx context.Context, userID, lobbyID string) (JoinResult, error) {
	lobbyID, ok := domain.CanonicalID(lobbyID)
	if !ok {
		return JoinResult{}, domain.Errorf(domain.CodeNotFound, "no such lobby")
	}
	res, done, err := s.joinFree(ctx, userID, lobbyID)
	if err != nil {
		return res, fmt.Errorf("join the queue of lobby %s: %w", lobbyID, err)
	}
	if done {
		return res, nil
	}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		res = JoinResult{}
		var l Lobby
		// The lobby's lock orders the joins that run in a transaction; it
		// leaves the joins without one, whose rows name the lobby (their
		// foreign keys take its KEY SHARE lock), alone.
		if err := tx.NewSelect().Model(&l).Where("id = ?", lobbyID).For("NO KEY UPDATE").Scan(ctx); errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.CodeNotFound, "no such lobby")
		} else if err != nil {
			return err
		}
		// The user's own presence and the queue, locked in one statement.
		var rows []presence
		if err := tx.NewSelect().Model(&rows).Where("user_id = ? OR (kind = 'queue' AND lobby_id = ?)", userID, l.ID).
			OrderExpr("user_id = ? DESC, queue_pos", userID).Limit(21).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("read the queue: %w", err)
		}
		waiting := rows
		if len(rows) > 0 && rows[0].UserID == userID {
			if err := busy(rows[0], &l); err != nil {
				if errors.Is(err, errAlreadyQueuedHere) {
					res.Status = "queued"
					return nil
				}
				return err
			}
			waiting = rows[1:]
		}
		// Read after the queue's rows are locked: an exclusion that takes
		// a player out of the queue has committed, or waits for this.
		refused, err := s.stakeRefusals(ctx, tx, userID, waiting, l.StakeMinor)
		if err != nil {
			return err
		}
		if e := refused[userID]; e != nil {
			return e
		}
		if available, ok, err := covers(ctx, tx, userID, l.StakeMinor); err != nil {
			return err
		} else if !ok {
			return stakeNotCovered(l.StakeMinor, available)
		}
		opponent, err := s.nextInQueue(ctx, tx, l, waiting, refused)
		if err != nil {
			return err
		}
		if opponent == "" {
			// The user had no presence row to lock: a concurrent join of
			// another lobby may insert one first.
			// (A free lobby's join that waits does not lock the lobby: one
			// may have queued since this transaction's reads.) The next
			// attempt sees who did: another join of the user's (CONFLICT),
			// or the player to match.
			ins, err := tx.NewInsert().Model(&presence{UserID: userID, Kind: "queue", LobbyID: &l.ID, Since: s.now()}).
				On("CONFLICT DO NOTHING").Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := ins.RowsAffected(); n == 0 {
				return db.Retry(domain.Errorf(domain.CodeConflict, "you joined another queue or game at the same moment; leave it first"))
			}
			res.Status = "queued"
			return nil
		}
		g, err := s.startGame(ctx, tx, newGame{lobbyID: &l.ID, waiting: []string{opponent}, gameType: l.GameType, stake: l.StakeMinor,
			settings: l.Settings, players: []string{opponent, userID}})
		if err != nil {
			return err
		}
		res = JoinResult{Status: "matched", GameID: g.ID}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("join the queue of lobby %s: %w", lobbyID, err)
	}
	return res, nil
}

var errAlreadyQueuedHere = errors.New("already queued in this lobby")

// joinFreeSQL queues user $2 at $3 in free lobby $1 when nobody is in a
// queue or a game as $2 (the queue's index refuses a second player
// waiting), and reads the lobby, whether $2 was queued, who waits there
// and whether $2 is present elsewhere. Its reads see the queue as it was
// before the insert. It is run prepared (see db.QueryPrepared): every
// join of a lobby runs it.
const joinFreeSQL = `WITH l AS (SELECT id, game_type, stake_minor, settings FROM lobbies WHERE id = $1),
	q AS (INSERT INTO user_presence (user_id, kind, lobby_id, since) SELECT $2, 'queue', l.id, $3 FROM l WHERE l.stake_minor = 0
		ON CONFLICT DO NOTHING RETURNING user_id)
	SELECT l.id, l.game_type, l.stake_minor, l.settings, EXISTS (SELECT FROM q) AS queued_now,
		(SELECT p.user_id FROM user_presence AS p WHERE p.kind = 'queue' AND p.lobby_id = l.id ORDER BY p.queue_pos LIMIT 1) AS waiting,
		EXISTS (SELECT FROM user_presence AS p WHERE p.user_id = $2) AS present
	FROM l`

// joinFree joins the queue of a free lobby without a transaction when it
// can: one statement queues the user when nobody waits there (the queue's
// index refuses a second player waiting), and one more starts the game
// with the player who waits (see startFree). It reports false when the
// join must run in a transaction: a staked lobby (player protection and
// the stakes), a user already in a queue or a game (whose answer the
// transaction gives), a join that raced another. NOT_FOUND when there is
// no such lobby.
func (s *Service) joinFree(ctx context.Context, userID, lobbyID string) (JoinResult, bool, error) {
	var row struct {
		Lobby
		Queued  bool    `bun:"queued_now"`
		Waiting *string `bun:"waiting"`
		Present bool    `bun:"present"`
	}
	err := db.ScanPrepared(ctx, s.db, &row, joinFreeSQL, lobbyID, userID, s.now())
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return JoinResult{}, false, domain.Errorf(domain.CodeNotFound, "no such lobby")
	case db.IsRetryable(err):
		return JoinResult{}, false, nil // a deadlock with another join: the transaction runs again
	case err != nil:
		return JoinResult{}, false, err
	}
	switch {
	case row.Queued:
		return JoinResult{Status: "queued"}, true, nil
	case row.StakeMinor > 0 || row.Present || row.Waiting == nil || *row.Waiting == userID:
		return JoinResult{}, false, nil
	}
	g, ok, err := s.startFree(ctx, newGame{lobbyID: &row.ID, waiting: []string{*row.Waiting}, gameType: row.GameType,
		settings: row.Settings, players: []string{*row.Waiting, userID}})
	if db.IsRetryable(err) {
		return JoinResult{}, false, nil // a deadlock with another join: the transaction runs again
	}
	if err != nil || !ok {
		return JoinResult{}, false, err
	}
	return JoinResult{Status: "matched", GameID: g.ID}, true, nil
}

// checkFree refuses a user who is in a game or another queue. It locks the
// user's presence row (if any) for the transaction.
func (s *Service) checkFree(ctx context.Context, tx db.Tx, userID string, here *Lobby) error {
	var p presence
	err := tx.NewSelect().Model(&p).Where("user_id = ?", userID).For("UPDATE").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return busy(p, here)
}

// busy is the CONFLICT of a user present in a game or a queue other than
// here (errAlreadyQueuedHere for here's queue).
func busy(p presence, here *Lobby) error {
	if p.Kind == "game" {
		return domain.Errorf(domain.CodeConflict, "you are already playing a game; finish it first").With("gameId", *p.GameID)
	}
	if here != nil && p.LobbyID != nil && *p.LobbyID == here.ID {
		return errAlreadyQueuedHere
	}
	return domain.Errorf(domain.CodeConflict, "you are already waiting in another queue; leave it first").With("lobbyId", *p.LobbyID)
}

// covers reports whether the user's available balance covers stake, and
// what that balance is; it locks the balance row so that it stays so until
// the transaction ends.
func covers(ctx context.Context, tx db.Tx, userID string, stake int64) (available int64, ok bool, err error) {
	if stake == 0 {
		return 0, true, nil
	}
	err = tx.QueryRowContext(ctx, "SELECT balance FROM ledger_accounts WHERE id = ? FOR UPDATE", money.Available(userID)).Scan(&available)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return available, available >= stake, err
}

// stakeNotCovered is the INSUFFICIENT_FUNDS of a user whose own available
// balance does not cover a stake. It names both amounts, also as
// neededMinor and availableMinor, so that a page can say how much is
// missing and send the user to deposit it. (Only ever the asking user's
// own balance: another player's stays private.)
func stakeNotCovered(stake, available int64) *domain.Error {
	return domain.Errorf(domain.CodeInsufficientFunds, "The stake is %s USDC and your available balance is %s USDC",
		money.FormatUSDC(stake), money.FormatUSDC(available)).With("neededMinor", stake).With("availableMinor", available)
}

// nextInQueue returns the longest-waiting user of the lobby's queue (the
// locked rows waiting, in queue order) who can still cover the stake and
// whom player protection does not refuse it (refused); users who no
// longer may are taken out of the queue and told why.
func (s *Service) nextInQueue(ctx context.Context, tx db.Tx, l Lobby, waiting []presence, refused map[string]*domain.Error) (string, error) {
	for _, p := range waiting {
		reason := "your balance no longer covers the stake"
		if e := refused[p.UserID]; e != nil {
			reason = e.Message
		} else {
			_, ok, err := covers(ctx, tx, p.UserID, l.StakeMinor)
			if err != nil {
				return "", err
			}
			if ok {
				return p.UserID, nil
			}
		}
		if _, err := tx.NewDelete().Model(&p).WherePK().Exec(ctx); err != nil {
			return "", err
		}
		if err := s.events.Tell(tx, p.UserID, domain.NoticeQueueRemoved, QueueRemoved{LobbyID: l.ID, Reason: reason}); err != nil {
			return "", err
		}
	}
	return "", nil
}

// checkStake asks player protection about the stake of the player asking
// in this request (a free game is never refused).
func (s *Service) checkStake(ctx context.Context, idb bun.IDB, userID string, stake int64) error {
	if stake <= 0 || s.protect == nil {
		return nil
	}
	return s.protect.CheckStake(ctx, idb, userID, stake)
}

// stakeRefusals asks player protection, in one statement, about a stake of
// the player asking in this request (the request's region included) and
// of others waiting to play them: the refusals by user.
func (s *Service) stakeRefusals(ctx context.Context, idb bun.IDB, asker string, others []presence, stake int64) (map[string]*domain.Error, error) {
	if stake <= 0 || s.protect == nil {
		return nil, nil
	}
	if err := s.protect.CheckRegion(ctx); err != nil {
		return nil, err
	}
	users := []string{asker}
	for _, p := range others {
		users = append(users, p.UserID)
	}
	return s.protect.StakeRefusals(ctx, idb, users, stake)
}

// otherRefused is the CONFLICT of a game that cannot start because player
// protection refuses the stake of a player who is not the one asking:
// their reasons are theirs alone.
func otherRefused(who string) *domain.Error {
	return domain.Errorf(domain.CodeConflict, "the %s cannot play for a stake at the moment, so the game cannot start", who)
}

// LockStakedQueues locks the user's entries in the queues of staked
// lobbies for tx: what LeaveStakedQueues would end.
func (s *Service) LockStakedQueues(ctx context.Context, tx db.Tx, userID string) error {
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM user_presence AS p JOIN lobbies AS l ON l.id = p.lobby_id
		WHERE p.user_id = ? AND p.kind = 'queue' AND l.stake_minor > 0 FOR UPDATE OF p`, userID); err != nil {
		return fmt.Errorf("lock the staked queue entries of %s: %w", userID, err)
	}
	return nil
}

// LeaveStakedQueues takes the user out of the queue of a staked lobby they
// wait in, in tx, and tells them (a time-out or self-exclusion starts).
func (s *Service) LeaveStakedQueues(ctx context.Context, tx db.Tx, userID string) error {
	var lobbies []string
	if err := tx.NewRaw(`DELETE FROM user_presence AS p USING lobbies AS l
		WHERE p.user_id = ? AND p.kind = 'queue' AND l.id = p.lobby_id AND l.stake_minor > 0 RETURNING p.lobby_id`,
		userID).Scan(ctx, &lobbies); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("take %s out of staked queues: %w", userID, err)
	}
	for _, id := range lobbies {
		if err := s.events.Tell(tx, userID, domain.NoticeQueueRemoved, QueueRemoved{LobbyID: id,
			Reason: "you are taking a time-out or excluded yourself: staked games are closed to you until it ends"}); err != nil {
			return err
		}
	}
	return nil
}

// QueueRemoved is the queue:removed notice to a user taken out of a queue.
type QueueRemoved struct {
	LobbyID string `json:"lobbyId"`
	Reason  string `json:"reason" doc:"why, in words for people"`
}

// LeaveQueue takes the user out of a lobby's queue. NOT_FOUND when they are
// not waiting there.
func (s *Service) LeaveQueue(ctx context.Context, userID, lobbyID string) error {
	lobbyID, ok := domain.CanonicalID(lobbyID)
	if !ok {
		return domain.Errorf(domain.CodeNotFound, "you are not waiting in this lobby's queue")
	}
	res, err := s.db.NewDelete().Model((*presence)(nil)).
		Where("user_id = ? AND kind = 'queue' AND lobby_id = ?", userID, lobbyID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("leave the queue of lobby %s: %w", lobbyID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.Errorf(domain.CodeNotFound, "you are not waiting in this lobby's queue")
	}
	return nil
}

// PeoplesFreeTables returns the free lobbies where one person (not a bot)
// has been waiting since before since, oldest first.
func (s *Service) PeoplesFreeTables(ctx context.Context, since time.Time) ([]string, error) {
	var ids []string
	err := s.db.NewRaw(`SELECT l.id FROM lobbies AS l
		JOIN user_presence AS p ON p.lobby_id = l.id AND p.kind = 'queue'
		JOIN users AS u ON u.id = p.user_id AND NOT u.bot
		WHERE l.stake_minor = 0 AND p.since < ?
			AND (SELECT count(*) FROM user_presence AS q WHERE q.lobby_id = l.id AND q.kind = 'queue') = 1
		ORDER BY p.since LIMIT 10`, since).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("find people's free tables: %w", err)
	}
	return ids, nil
}
