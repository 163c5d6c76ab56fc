package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"wager/domain"
)

// History returns up to limit messages of a game's chat or of viewerID's
// conversation with user contextID, newest first, older than the message
// id before when it is not 0. Any signed-in user may read an existing
// game's chat, finished or not. Reading a conversation marks it read up to
// the newest message returned. It returns VALIDATION_ERROR (bad type,
// your own id), or NOT_FOUND (no such game or user).
func (s *Service) History(ctx context.Context, viewerID, contextType, contextID string, limit int, before int64) ([]Message, error) {
	if err := CheckContextType(contextType); err != nil {
		return nil, err
	}
	limit = pageSize(limit)
	key, otherID := "", ""
	if contextType == ContextGame {
		id, err := gameIDOf(contextID)
		if err != nil {
			return nil, err
		}
		if ok, err := s.db.NewSelect().Table("games").Where("id = ?", id).Exists(ctx); err != nil {
			return nil, fmt.Errorf("check that game %s exists: %w", id, err)
		} else if !ok {
			return nil, domain.Errorf(domain.CodeNotFound, "no such game")
		}
		key = id
	} else {
		id, err := otherUser(viewerID, contextID)
		if err != nil {
			return nil, err
		}
		if _, err := usernameOf(ctx, s.db, id); err != nil {
			return nil, err
		}
		key, otherID = pairKey(viewerID, id), id
	}

	var rows []row
	q := s.db.NewSelect().Model(&rows).ColumnExpr("m.*").ColumnExpr("u.username AS sender_name").
		Join("LEFT JOIN users AS u ON u.id = m.sender_id").
		Where("m.context_type = ? AND m.context_id = ?", contextType, key).OrderExpr("m.id DESC").Limit(int64(limit))
	if before > 0 {
		q = q.Where("m.id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the %s messages of %s: %w", contextType, key, err)
	}
	if otherID != "" && len(rows) > 0 {
		if err := markRead(ctx, s.db, viewerID, otherID, rows[0].ID); err != nil {
			return nil, err
		}
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		out[i] = r.messageFor(viewerID)
	}
	return out, nil
}

// markRead moves userID's read mark of the conversation with otherID up
// to lastID (never back).
func markRead(ctx context.Context, idb bun.IDB, userID, otherID string, lastID int64) error {
	if _, err := idb.ExecContext(ctx, `INSERT INTO dm_reads (user_id, other_id, last_read_id) VALUES (?, ?, ?)
		ON CONFLICT (user_id, other_id) DO UPDATE SET last_read_id = GREATEST(dm_reads.last_read_id, EXCLUDED.last_read_id)`,
		userID, otherID, lastID); err != nil {
		return fmt.Errorf("mark the conversation of %s with %s read up to message %d: %w", userID, otherID, lastID, err)
	}
	return nil
}

// Thread is one direct-message conversation of a user.
type Thread struct {
	User        UserRef `json:"user" doc:"the other user"`
	LastMessage Message `json:"lastMessage"`
	UnreadCount int     `json:"unreadCount" doc:"messages from the other user after the last time you read the conversation"`
}

// Threads returns up to limit of userID's conversations, the one with the
// newest message first; before (a message id, 0 for none) pages back to
// conversations whose last message is older than it.
func (s *Service) Threads(ctx context.Context, userID string, limit int, before int64) ([]Thread, error) {
	limit = pageSize(limit)
	var rows []struct {
		row
		OtherID   string `bun:"other_id"`
		OtherName string `bun:"other_name"`
		Unread    int    `bun:"unread"`
	}
	err := s.db.NewRaw(`
		WITH threads AS (
			SELECT max(id) AS last_id,
			       CASE WHEN sender_id = ? THEN recipient_id ELSE sender_id END AS other_id
			FROM chat_messages
			WHERE context_type = 'dm' AND (sender_id = ? OR recipient_id = ?)
			GROUP BY context_id, 2
		)
		SELECT m.*, su.username AS sender_name, t.other_id, ou.username AS other_name,
		       (SELECT count(*) FROM chat_messages x
		        WHERE x.context_type = 'dm' AND x.context_id = m.context_id AND x.sender_id = t.other_id
		          AND x.id > COALESCE(r.last_read_id, 0)) AS unread
		FROM threads t
		JOIN chat_messages m ON m.id = t.last_id
		JOIN users su ON su.id = m.sender_id
		JOIN users ou ON ou.id = t.other_id
		LEFT JOIN dm_reads r ON r.user_id = ? AND r.other_id = t.other_id
		WHERE (? = 0 OR t.last_id < ?)
		ORDER BY t.last_id DESC
		LIMIT ?`, userID, userID, userID, userID, before, before, limit).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read the direct-message threads of user %s: %w", userID, err)
	}
	out := make([]Thread, len(rows))
	for i, r := range rows {
		out[i] = Thread{User: UserRef{UserID: r.OtherID, Username: r.OtherName},
			LastMessage: r.row.messageFor(userID), UnreadCount: r.Unread}
	}
	return out, nil
}

// Block stops direct messages between userID and otherID, both ways.
// Blocking twice is the same as once. It returns VALIDATION_ERROR for your
// own id and NOT_FOUND when there is no such user.
func (s *Service) Block(ctx context.Context, userID, otherID string) error {
	otherID, err := s.blockTarget(ctx, userID, otherID)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO user_blocks (blocker_id, blocked_id, created_at) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, userID, otherID, s.now()); err != nil {
		return fmt.Errorf("store the block of %s by %s: %w", otherID, userID, err)
	}
	return nil
}

// Unblock lifts userID's block of otherID (a block by otherID stays).
// Unblocking someone not blocked does nothing. It returns VALIDATION_ERROR
// for your own id and NOT_FOUND when there is no such user.
func (s *Service) Unblock(ctx context.Context, userID, otherID string) error {
	otherID, err := s.blockTarget(ctx, userID, otherID)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM user_blocks WHERE blocker_id = ? AND blocked_id = ?", userID, otherID); err != nil {
		return fmt.Errorf("remove the block of %s by %s: %w", otherID, userID, err)
	}
	return nil
}

func (s *Service) blockTarget(ctx context.Context, userID, otherID string) (string, error) {
	id, err := otherUser(userID, otherID)
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) && de.Code == domain.CodeValidation {
			return "", domain.Invalid(map[string]string{"id": "you cannot block yourself"})
		}
		return "", err
	}
	if _, err := usernameOf(ctx, s.db, id); err != nil {
		return "", err
	}
	return id, nil
}

// Page sizes: DefaultLimit when none is given, at most MaxLimit.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

func pageSize(limit int) int {
	if limit <= 0 {
		return DefaultLimit
	}
	return min(limit, MaxLimit)
}
