package game

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"wager/db"
	"wager/domain"
	"wager/domain/game/rules"
)

// ResumeGap is how long the deadline worker may go without running on any
// instance before the deadlines that passed meanwhile count as passed
// while the platform was down: those are given their full time again, not
// enforced.
const ResumeGap = 10 * time.Second

// Events are this package's room events by name, each with its data type
// (see rules.Events), and Notices its personal notices.
var (
	Events = map[domain.EventName]any{
		domain.EventGameStarted: Started{}, domain.EventGameCompleted: Completed{}, domain.EventGameResumed: Resumed{},
		domain.EventRematchRequested: RematchBy{}, domain.EventRematchCancelled: RematchBy{},
		domain.EventRematchStarted: RematchStarted{}, domain.EventRematchLobby: RematchLobby{},
	}
	Notices = map[domain.NoticeKind]any{
		domain.NoticeMatched: Matched{}, domain.NoticeQueueRemoved: QueueRemoved{},
		domain.NoticeRematchRequested: RematchNotice{}, domain.NoticeRematchLobby: RematchLobbyNotice{},
		domain.NoticeChallengeReceived: Challenge{}, domain.NoticeChallengeAccepted: Challenge{}, domain.NoticeChallengeDeclined: Challenge{},
		domain.NoticeChallengeCancelled: Challenge{}, domain.NoticeChallengeExpired: Challenge{},
	}
)

// Resumed is the data of game:resumed: the current round's or turn's new
// deadline, its full time counted from when the platform was back.
type Resumed struct {
	Deadline time.Time `json:"deadline"`
}

// RunDeadlinesOnce is one run of the deadline worker: it records the run
// (several instances share the record), and when no instance had run it
// for more than ResumeGap, or the platform was closed to players since
// the last run, it first gives every game whose deadline passed meanwhile
// its round's or turn's full time again (game:resumed). Then it applies
// the timeout rules to the games whose deadline passed by the time of the
// record, as ExpireDue does: only a deadline that passed while the worker
// ran and players could act is enforced. With each record it expires the
// challenges nobody answered in time (challenge:expired to both users).
// While the platform is closed
// (maintenance mode: no player can move) it enforces nothing and records
// that it was closed. It returns how many games it resumed and how many
// it advanced; the error says which part failed.
func (s *Service) RunDeadlinesOnce(ctx context.Context) (resumed, expired int, err error) {
	if s.closed != nil && s.closed() {
		if _, err := s.db.NewRaw("UPDATE deadline_worker SET closed = true WHERE NOT closed").Exec(ctx); err != nil {
			return 0, 0, fmt.Errorf("record that the platform is closed to players: %w", err)
		}
		return 0, 0, nil
	}
	var ranAt time.Time
	for {
		// A long run records itself again, so that it is not taken for an
		// outage by the next.
		if now := s.now(); ranAt.IsZero() || now.Sub(ranAt) >= time.Second {
			n, err := s.recordRun(ctx, now)
			resumed += n
			if err != nil {
				return resumed, expired, err
			}
			if err := s.expireChallenges(ctx, now); err != nil {
				return resumed, expired, err
			}
			ranAt = now
		}
		claimed, err := s.expireOne(ctx, ranAt)
		if err != nil || !claimed {
			return resumed, expired, err
		}
		expired++
	}
}

// recordRun records a run of the deadline worker at now, and resumes the
// games whose deadline passed since the previous run when that was more
// than ResumeGap before now (or never), or the platform was closed to
// players since. While the worker runs it is one statement; after a gap
// or a closure one transaction, which holds the record's lock so that
// instances starting together resume each game once. It returns how many
// games it resumed.
func (s *Service) recordRun(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.NewRaw("UPDATE deadline_worker SET ran_at = greatest(ran_at, ?) WHERE ran_at >= ? AND NOT closed",
		now, now.Add(-ResumeGap)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("record a run of the deadline worker: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return 0, nil
	}
	resumed := 0
	var prev sql.NullTime
	var closed bool
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		resumed = 0
		if err := tx.QueryRowContext(ctx, "SELECT ran_at, closed FROM deadline_worker FOR UPDATE").Scan(&prev, &closed); err != nil {
			return fmt.Errorf("read the last run of the deadline worker: %w", err)
		}
		// Another instance may have resumed and recorded its run while
		// this one waited for the lock.
		if !prev.Valid || now.Sub(prev.Time) > ResumeGap || closed {
			var games []Game
			q := tx.NewSelect().Model(&games).ColumnExpr("g.*").
				ColumnExpr("ARRAY(SELECT p.user_id::text FROM game_players AS p WHERE p.game_id = g.id ORDER BY p.seat) AS players").
				Where("g.status = 'active' AND g.deadline <= ?", now)
			if prev.Valid {
				q = q.Where("g.deadline > ?", prev.Time)
			}
			if err := q.Order("g.id").For("UPDATE OF g").Scan(ctx); err != nil {
				return fmt.Errorf("read the games whose deadline passed while the platform was down: %w", err)
			}
			for i := range games {
				if err := s.resume(ctx, tx, &games[i], now); err != nil {
					return err
				}
			}
			resumed = len(games)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE deadline_worker SET ran_at = greatest(ran_at, ?), closed = false", now); err != nil {
			return fmt.Errorf("record a run of the deadline worker: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if resumed > 0 {
		since := "never (first run)"
		if prev.Valid {
			since = prev.Time.UTC().Format(time.RFC3339)
		}
		s.log.Info("resumed the games whose deadline passed while no deadline worker ran or the platform was closed",
			"games", resumed, "last_run", since, "closed", closed)
	}
	return resumed, nil
}

// resume gives a locked game's current round or turn its full time again
// from now, stored with game:resumed.
func (s *Service) resume(ctx context.Context, tx db.Tx, g *Game, now time.Time) error {
	r, err := rulesOf(g.GameType)
	if err != nil {
		return err
	}
	st, err := r.Load(g.State)
	if err != nil {
		return fmt.Errorf("game %s: %w", g.ID, err)
	}
	if !st.Resume(now) {
		return nil
	}
	if g.State, err = st.MarshalJSON(); err != nil {
		return fmt.Errorf("encode the state of game %s: %w", g.ID, err)
	}
	d := st.Deadline()
	g.Deadline = &d
	// The event carries the round's or turn's deadline as views show it: a
	// round closes sooner (Deadline) when its only player left to choose
	// went berserk, and its views keep the round's own end.
	shown := d
	if v := st.Public(now).Base().Round.Deadline; v != nil {
		if t, err := time.Parse(time.RFC3339Nano, *v); err == nil {
			shown = t
		}
	}
	return s.append(ctx, tx, g, now, columns{set: "state = ?, deadline = ?", args: []any{string(g.State), g.Deadline}}, false,
		rules.Event{Name: domain.EventGameResumed, Data: Resumed{Deadline: shown.UTC()}})
}
