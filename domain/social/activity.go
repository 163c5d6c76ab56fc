package social

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
)

// Activity entry types.
const (
	ActivityGameWon     = "game_won"
	ActivityDonation    = "donation"
	ActivityTip         = "tip"
	ActivityAchievement = "achievement"
	ActivityBetWon      = "bet_won"
)

// Notices are this package's notices by name, each with its data type (see
// rules.Events): the activity feed's entries (domain.NoticeActivity) go
// to every API socket.
var Notices = map[domain.NoticeKind]any{domain.NoticeActivity: Entry{}}

// UserRef names a user in the feed.
type UserRef struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
}

// Entry is one line of the public activity feed. Its data holds nothing
// private: no direct messages, balances or support.
type Entry struct {
	bun.BaseModel `bun:"table:activity,alias:a"`

	ID        int64           `bun:"id,pk,autoincrement" json:"id,string" doc:"a sequence number as a string; pass the last one seen as ?before= for older ones"`
	Type      string          `bun:"type" json:"type" enum:"game_won,donation,tip,achievement,bet_won,tournament_won" doc:"game_won, donation, tip, achievement, bet_won, tournament_won"`
	ActorID   string          `bun:"actor_id,type:uuid" json:"-"`
	ActorName string          `bun:"actor_name,scanonly" json:"-"`
	Actor     UserRef         `bun:"-" json:"actor"`
	Data      json.RawMessage `bun:"data,type:jsonb" json:"data" type:"object" doc:"depends on the type"`
	CreatedAt time.Time       `bun:"created_at" json:"createdAt"`
}

// GameWon is the data of a game_won entry.
type GameWon struct {
	GameID      string  `json:"gameId"`
	GameType    string  `json:"gameType"`
	Loser       UserRef `json:"loser"`
	PayoutMinor int64   `json:"payoutMinor"`
}

// Donated is the data of a donation entry.
type Donated struct {
	GameID      string `json:"gameId"`
	AmountMinor int64  `json:"amountMinor"`
}

// Tipped is the data of a tip entry.
type Tipped struct {
	To          UserRef `json:"to"`
	AmountMinor int64   `json:"amountMinor"`
}

// addActivity stores a feed entry in the caller's transaction and pushes
// it to every open socket once it commits. The demo bots' doings are left
// out: they play all day and would fill the feed.
func (s *Service) addActivity(ctx context.Context, tx db.Tx, typ, actorID string, data any) error {
	return s.addActivities(ctx, tx, typ, []actorData{{actorID, data}})
}

// actorData is one feed entry for addActivities.
type actorData struct {
	actorID string
	data    any
}

// addActivitiesSQL stores feed entries of one type ($3, at $4) for
// actors ($1) with data ($2), in their order, leaving out the bots', and
// returns each stored entry's position (from 1), id and actor's name.
const addActivitiesSQL = `WITH v AS MATERIALIZED (
		SELECT nextval(pg_get_serial_sequence('activity', 'id')) AS id, x.n, u.id AS actor_id, u.username, x.data
		FROM unnest($1::uuid[], $2::jsonb[]) WITH ORDINALITY AS x (actor_id, data, n)
		JOIN users AS u ON u.id = x.actor_id AND NOT u.bot ORDER BY x.n
	), a AS (
		INSERT INTO activity (id, type, actor_id, data, created_at) SELECT id, $3, actor_id, data, $4 FROM v
	)
	SELECT n, id, username FROM v ORDER BY n`

// addActivities is addActivity of several entries of one type, in one
// statement.
func (s *Service) addActivities(ctx context.Context, tx db.Tx, typ string, entries []actorData) error {
	if len(entries) == 0 {
		return nil
	}
	actors := make([]string, len(entries))
	raws := make([]string, len(entries))
	for i, e := range entries {
		raw, err := json.Marshal(e.data)
		if err != nil {
			return fmt.Errorf("encode the %s activity: %w", typ, err)
		}
		actors[i], raws[i] = e.actorID, string(raw)
	}
	at := s.now()
	rows, err := db.QueryPrepared(ctx, tx, addActivitiesSQL, actors, raws, typ, at)
	if err != nil {
		return fmt.Errorf("store %d %s activities: %w", len(entries), typ, err)
	}
	defer rows.Close()
	var stored []Entry
	for rows.Next() {
		var n int
		var e Entry
		if err := rows.Scan(&n, &e.ID, &e.Actor.Username); err != nil {
			return fmt.Errorf("read the stored %s activities: %w", typ, err)
		}
		if n < 1 || n > len(entries) {
			return fmt.Errorf("read the stored %s activities: no entry %d", typ, n)
		}
		e.Type, e.ActorID, e.Actor.UserID, e.Data, e.CreatedAt = typ, actors[n-1], actors[n-1], json.RawMessage(raws[n-1]), at
		stored = append(stored, e)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the stored %s activities: %w", typ, err)
	}
	for _, e := range stored {
		if err := s.events.Broadcast(tx, domain.NoticeActivity, e); err != nil {
			return err
		}
	}
	return nil
}

// addActivityLater is addActivity of an actor who is not a bot, under the
// id id drawn for it beforehand: the entry is queued with the
// writes of tx (see db.Tx.Later).
func (s *Service) addActivityLater(tx db.Tx, id int64, typ string, actor UserRef, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode the %s activity: %w", typ, err)
	}
	e := Entry{ID: id, Type: typ, ActorID: actor.UserID, Actor: actor, Data: raw, CreatedAt: s.now()}
	if err := tx.Later("INSERT INTO activity (id, type, actor_id, data, created_at) VALUES (?, ?, ?, ?, ?)",
		e.ID, e.Type, e.ActorID, string(raw), e.CreatedAt); err != nil {
		return fmt.Errorf("store the %s activity of %s: %w", typ, actor.UserID, err)
	}
	return s.events.Broadcast(tx, domain.NoticeActivity, e)
}

// Feed returns the activity feed newest first, by each entry's time (ties
// by id): at most limit entries listed after the entry before (0 for the
// newest).
func (s *Service) Feed(ctx context.Context, limit int, before int64) ([]Entry, error) {
	out := []Entry{}
	q := s.db.NewSelect().Model(&out).ColumnExpr("a.*").ColumnExpr("u.username AS actor_name").
		Join("JOIN users AS u ON u.id = a.actor_id").OrderExpr("a.created_at DESC, a.id DESC").Limit(int64(limit))
	if before > 0 {
		q = q.Where("(a.created_at, a.id) < (SELECT b.created_at, b.id FROM activity AS b WHERE b.id = ?)", before)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the activity feed: %w", err)
	}
	for i := range out {
		out[i].Actor = UserRef{UserID: out[i].ActorID, Username: out[i].ActorName}
	}
	return out, nil
}

// ReadEnd takes part in every game's end (game.Participant): a completed game's players earn
// their game achievements, and its winner is in the feed. It reads with
// the game's end (the players' names, which of the game achievements they
// have, the winner's two games before this one unless they have their
// hat trick already, and the feed entry's id) and queues the feed entry;
// only achievements earned for the first time take statements of their
// own (see Unlock).
func (s *Service) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	tx, g, o, reads := e.Tx, e.Game, e.Outcome, e.Reads
	if g.Status != game.StatusCompleted {
		return nil, nil
	}
	var players []struct {
		ID       string   `json:"id"`
		Username string   `json:"username"`
		Feed     *int64   `json:"feed"` // the winner's entry's id; null for the others and for a bot
		Has      []string `json:"has"`  // which of gameAchievementIDs they have
	}
	reads.Column(db.JSON(&players), `SELECT json_agg(json_build_object('id', u.id, 'username', u.username,
			'feed', CASE WHEN u.id::text = ? AND NOT u.bot THEN nextval(pg_get_serial_sequence('activity', 'id')) END,
			'has', ARRAY(SELECT a.achievement_id FROM user_achievements AS a WHERE a.user_id = u.id AND a.achievement_id = ANY(?::text[]))))
		FROM users AS u WHERE u.id = ANY(?::uuid[])`, o.Winner, gameAchievementIDs, g.Players)
	// This game is the third win in a row when the two completed games
	// before it were won too (this one is not stored as completed until
	// the transaction ends).
	var recent []*string
	if o.Winner != "" {
		// Each of the winner's games is read by its key: joined freely,
		// the planner could look each one up among all completed games
		// by the status index instead (it did, 5-13 ms a call, in runs
		// whose statistics were taken while the tables were small).
		// OFFSET 0 keeps the lookup a subquery of its own.
		reads.Column(db.JSON(&recent), `SELECT json_agg(w.winner_id ORDER BY w.ended_at DESC)
			FROM (SELECT g.winner_id, g.ended_at FROM game_players AS p
				CROSS JOIN LATERAL (SELECT id, winner_id, ended_at, status FROM games WHERE id = p.game_id OFFSET 0) AS g
				WHERE p.user_id = ? AND g.status = 'completed' AND g.id <> ? ORDER BY g.ended_at DESC LIMIT 2) AS w
			WHERE NOT EXISTS (SELECT 1 FROM user_achievements WHERE user_id = ? AND achievement_id = ?)`,
			o.Winner, g.ID, o.Winner, WinStreak3)
	}
	return func(ctx context.Context, e *game.Ending) error {
		g := e.Game
		streak := len(recent) == 2 && recent[0] != nil && *recent[0] == o.Winner && recent[1] != nil && *recent[1] == o.Winner
		var users, earned []string // pairs: both players' new achievements, unlocked in one statement
		for _, p := range players {
			for _, id := range gameAchievements(g, o, p.ID, streak) {
				if !slices.Contains(p.Has, id) {
					users, earned = append(users, p.ID), append(earned, id)
				}
			}
		}
		if _, err := s.unlock(ctx, tx, users, earned); err != nil {
			return err
		}
		for _, p := range players {
			if p.ID != o.Winner || p.Feed == nil {
				continue
			}
			won := GameWon{GameID: g.ID, GameType: g.GameType}
			if g.Result != nil {
				won.PayoutMinor = g.Result.PayoutMinor
			}
			for _, q := range players {
				if q.ID != p.ID {
					won.Loser = UserRef{UserID: q.ID, Username: q.Username}
				}
			}
			if err := s.addActivityLater(tx, *p.Feed, ActivityGameWon, UserRef{UserID: p.ID, Username: p.Username}, won); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// gameAchievementIDs are the achievements a game's end can earn.
var gameAchievementIDs = []string{FirstGame, FirstWin, WinStreak3, Flawless, HighRoller}

// gameAchievements returns the achievements finishing g earned userID
// (whether they had them or not); streak: the winner won their two games
// before this one.
func gameAchievements(g game.Game, o rules.Outcome, userID string, streak bool) []string {
	earned := []string{FirstGame}
	if o.Winner == userID {
		earned = append(earned, FirstWin)
		if o.Flawless {
			earned = append(earned, Flawless)
		}
		if g.StakeMinor >= HighRollerStakeMinor {
			earned = append(earned, HighRoller)
		}
		if streak {
			earned = append(earned, WinStreak3)
		}
	}
	return earned
}

// DonationConfirmed records a donation that went into a live game's pot,
// in the transaction that confirms it: the feed entry and the donor's
// donation achievements.
func (s *Service) DonationConfirmed(ctx context.Context, tx db.Tx, donorID, gameID string, amount int64) error {
	if err := s.addActivity(ctx, tx, ActivityDonation, donorID, Donated{GameID: gameID, AmountMinor: amount}); err != nil {
		return err
	}
	if _, err := s.Unlock(ctx, tx, donorID, FirstDonation); err != nil {
		return err
	}
	var total int64
	if err := tx.NewSelect().Table("donations").ColumnExpr("COALESCE(SUM(amount_minor), 0)").
		Where("donor_id = ? AND NOT late", donorID).Scan(ctx, &total); err != nil {
		return fmt.Errorf("total the donations of %s: %w", donorID, err)
	}
	if total >= PatronMinor {
		if _, err := s.Unlock(ctx, tx, donorID, Patron); err != nil {
			return err
		}
	}
	return nil
}

// BetWonData is the data of a bet_won entry.
type BetWonData struct {
	GameID      string `json:"gameId"`
	PayoutMinor int64  `json:"payoutMinor"`
}

// BetPlaced records a bet that went into a live game's pool, in the
// transaction that confirms it: the bettor's first-bet achievement.
func (s *Service) BetPlaced(ctx context.Context, tx db.Tx, bettorID, gameID string, amount int64) error {
	_, err := s.Unlock(ctx, tx, bettorID, FirstBet)
	return err
}

// BetWon records a winning bet in the game's settlement transaction: the
// bet_won feed entry.
func (s *Service) BetWon(ctx context.Context, tx db.Tx, bettorID, gameID string, payout int64) error {
	return s.addActivity(ctx, tx, ActivityBetWon, bettorID, BetWonData{GameID: gameID, PayoutMinor: payout})
}

// TipConfirmed records a confirmed tip in the transaction that confirms
// it: the feed entry (the tipper as actor) and the tipper's first-tip
// achievement.
func (s *Service) TipConfirmed(ctx context.Context, tx db.Tx, fromID, toID string, amount int64) error {
	var toName string
	if err := tx.NewSelect().Table("users").Column("username").Where("id = ?", toID).Scan(ctx, &toName); err != nil {
		return fmt.Errorf("read the recipient %s of a tip: %w", toID, err)
	}
	if err := s.addActivity(ctx, tx, ActivityTip, fromID, Tipped{To: UserRef{UserID: toID, Username: toName}, AmountMinor: amount}); err != nil {
		return err
	}
	_, err := s.Unlock(ctx, tx, fromID, FirstTip)
	return err
}
