package tournament

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/social"
)

// WorkEvery is how often the worker looks at the tournaments: a player
// who waits is paired well within 2 seconds.
const WorkEvery = 250 * time.Millisecond

// RunWorker runs Work every interval until ctx is done.
func (s *Service) RunWorker(ctx context.Context, interval time.Duration) {
	domain.Every(ctx, interval, s.log, "run tournaments", s.Work)
}

// Work creates the occurrences of recurring arenas that start within
// CreateAhead, then does the work that is due in every open tournament, each in its
// own transaction that claims the tournament's row with FOR UPDATE SKIP
// LOCKED (a tournament another instance works on is left to it): the
// reminder a minute before the start; the start, or the cancellation
// with refunds when fewer than two players entered; pairing the players
// who wait; the standings, at most once a second while they change; and
// the end with its prizes, once the end time has passed and the last game
// finished. It returns the first error.
func (s *Service) Work(ctx context.Context) error {
	first := s.createDue(ctx)
	now := s.now()
	var ids []string
	if err := s.db.NewSelect().Table("tournaments").Column("id").
		Where("status = 'running' OR (status = 'scheduled' AND (starts_at <= ? OR standings_at IS NULL OR changed_at >= standings_at))",
			now.Add(RemindBefore)).
		OrderExpr("starts_at").Limit(500).Scan(ctx, &ids); err != nil {
		return fmt.Errorf("find the tournaments with work: %w", err)
	}
	for _, id := range ids {
		if err := s.WorkOn(ctx, id); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WorkOn does the work that is due in one tournament (see Work), unless
// another instance holds it. It returns an error when a step failed:
// nothing of the transaction is kept then, and the next run does it all
// again.
func (s *Service) WorkOn(ctx context.Context, id string) error {
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		var t Tournament
		err := s.selectTournaments(tx, &t).Where("t.id = ? AND t.status IN (?, ?)", id, StatusScheduled, StatusRunning).
			For("UPDATE OF t SKIP LOCKED").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // done, or another instance works on it
		}
		if err != nil {
			return fmt.Errorf("claim tournament %s: %w", id, err)
		}
		t.named()
		now := s.now()
		if t.Status == StatusScheduled {
			if t.RemindedAt == nil && !now.Before(t.StartsAt.Add(-RemindBefore)) && now.Before(t.StartsAt) {
				if err := s.remind(ctx, tx, &t, now); err != nil {
					return err
				}
			}
			if !now.Before(t.StartsAt) {
				if t.PlayerCount < 2 {
					return s.cancel(ctx, tx, &t, now)
				}
				if err := s.start(ctx, tx, &t, now); err != nil {
					return err
				}
			}
		}
		if t.Status == StatusRunning {
			if !now.Before(t.EndsAt) {
				var playing bool
				if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM games WHERE tournament_id = ? AND status = 'active')",
					t.ID).Scan(&playing); err != nil {
					return fmt.Errorf("look for the running games of tournament %s: %w", t.ID, err)
				}
				if !playing {
					return s.finish(ctx, tx, &t, now)
				}
			} else if err := s.pair(ctx, tx, t, now); err != nil {
				return err
			}
		}
		return s.sendStandings(ctx, tx, &t, now)
	})
	if err != nil {
		return fmt.Errorf("work on tournament %s: %w", id, err)
	}
	return nil
}

// remind tells the entrants that the tournament starts in a minute.
func (s *Service) remind(ctx context.Context, tx db.Tx, t *Tournament, now time.Time) error {
	var users []string
	if err := tx.NewSelect().Table("tournament_players").Column("user_id").Where("tournament_id = ? AND NOT paused", t.ID).
		Scan(ctx, &users); err != nil {
		return fmt.Errorf("read the entrants of tournament %s: %w", t.ID, err)
	}
	msgs := make([]notify.Message, len(users))
	for i, u := range users {
		msgs[i] = notify.Message{UserID: u, Type: notify.TournamentStarting, Data: StartingNotice{TournamentID: t.ID, Name: t.Name,
			GameType: t.GameType, StartsAt: t.StartsAt, EndsAt: t.EndsAt}}
	}
	if err := s.notify.SendMany(ctx, tx, msgs); err != nil {
		return fmt.Errorf("remind the entrants of tournament %s: %w", t.ID, err)
	}
	t.RemindedAt = &now
	_, err := tx.NewUpdate().Model(t).Column("reminded_at").WherePK().Exec(ctx)
	return err
}

// StartingNotice is the data of a tournament_starting notification.
type StartingNotice struct {
	TournamentID string    `json:"tournamentId"`
	Name         string    `json:"name"`
	GameType     string    `json:"gameType"`
	StartsAt     time.Time `json:"startsAt"`
	EndsAt       time.Time `json:"endsAt"`
}

// PrizeNotice is the data of a tournament_prize notification.
type PrizeNotice struct {
	TournamentID string `json:"tournamentId"`
	Name         string `json:"name"`
	Rank         int    `json:"rank"`
	Players      int    `json:"players"`
	AmountMinor  int64  `json:"amountMinor" doc:"paid to the available balance"`
}

// start runs a tournament: every entrant not paused waits for a pairing
// from now.
func (s *Service) start(ctx context.Context, tx db.Tx, t *Tournament, now time.Time) error {
	t.Status, t.ChangedAt = StatusRunning, now
	if _, err := tx.NewUpdate().Model(t).Column("status", "changed_at").WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("start tournament %s: %w", t.ID, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE tournament_players SET waiting_since = ? WHERE tournament_id = ? AND NOT paused",
		now, t.ID); err != nil {
		return fmt.Errorf("start tournament %s: %w", t.ID, err)
	}
	err := s.appendEvents(ctx, tx, t.ID, now, domain.Event{Name: domain.EventTournamentStarted,
		Data: Started{StartsAt: t.StartsAt, EndsAt: t.EndsAt, PlayerCount: t.PlayerCount}})
	return err
}

// cancel ends a tournament that fewer than two players entered by its
// start: every entry is refunded.
func (s *Service) cancel(ctx context.Context, tx db.Tx, t *Tournament, now time.Time) error {
	var es []entrant
	if err := tx.NewSelect().Model(&es).Where("tournament_id = ?", t.ID).For("UPDATE").Scan(ctx); err != nil {
		return fmt.Errorf("read the entrants of tournament %s: %w", t.ID, err)
	}
	if err := s.refund(ctx, tx, *t, es, now); err != nil {
		return err
	}
	refunded := t.PrizePoolMinor
	t.Status, t.FinishedAt, t.PrizePoolMinor, t.ChangedAt = StatusCancelled, &now, 0, now
	if _, err := tx.NewUpdate().Model(t).Column("status", "finished_at", "pool_minor", "changed_at").WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("cancel tournament %s: %w", t.ID, err)
	}
	err := s.appendEvents(ctx, tx, t.ID, now, domain.Event{Name: domain.EventTournamentCancelled,
		Data: Cancelled{Reason: "fewer than two players at the start", RefundedMinor: refunded}})
	return err
}

// pair starts a game for the players who wait, two by two (Pair), in the
// tournament's transaction: each game with the tournament's type and
// settings, its players no longer waiting, and a tournament:pairing event.
// A player in a queue or another game is not waiting, nor is one without
// a socket in the arena's room or in their last game's (where its page
// offers the next game) on an instance present now: nobody is paired into
// a game they would not see start. When a player
// becomes busy between the read and the start (a queue joined at that
// moment), the game's start is refused and this whole transaction with
// it: the next run pairs the others.
func (s *Service) pair(ctx context.Context, tx db.Tx, t Tournament, now time.Time) error {
	var waiting []struct {
		UserID   string     `bun:"user_id"`
		Username string     `bun:"username"`
		Score    int        `bun:"score"`
		Last     *string    `bun:"last_opponent"`
		Since    *time.Time `bun:"waiting_since"`
	}
	if err := tx.NewSelect().TableExpr("tournament_players AS p").Join("JOIN users AS u ON u.id = p.user_id").
		ColumnExpr("p.user_id, u.username, p.score, p.last_opponent, p.waiting_since").
		Where("p.tournament_id = ? AND p.current_game IS NULL AND NOT p.paused", t.ID).
		Where("? OR NOT u.bot_account", t.AgentsAllowed). // an account that declared itself a bot since it entered
		Where("NOT EXISTS (SELECT 1 FROM user_presence AS pr WHERE pr.user_id = p.user_id)").
		Where(`EXISTS (SELECT 1 FROM room_members AS m JOIN instance_presence AS i ON i.instance_id = m.instance_id
			WHERE m.user_id = p.user_id AND m.room_id IN (p.tournament_id, p.last_game) AND i.updated_at > ?)`,
			now.Add(-eventlog.PresenceTTL)).
		For("UPDATE OF p").Scan(ctx, &waiting); err != nil {
		return fmt.Errorf("read the players waiting in tournament %s: %w", t.ID, err)
	}
	if len(waiting) < 2 {
		return nil
	}
	cands := make([]Candidate, len(waiting))
	names := map[string]string{}
	since := map[string]*time.Time{}
	for i, w := range waiting {
		cands[i] = Candidate{UserID: w.UserID, Score: w.Score}
		if w.Last != nil {
			cands[i].LastOpponent = *w.Last
		}
		names[w.UserID], since[w.UserID] = w.Username, w.Since
	}
	s.mu.Lock()
	pairings := Pair(cands, s.rnd)
	s.mu.Unlock()
	users, gamesOf, opponents := []string{}, []string{}, []string{}
	events := make([]domain.Event, 0, len(pairings))
	for _, p := range pairings {
		g, err := s.games.StartTournamentGame(ctx, tx, t.ID, t.GameType, t.Settings, []string{p[0], p[1]})
		if err != nil {
			return fmt.Errorf("start a game of tournament %s: %w", t.ID, err)
		}
		users = append(users, p[0], p[1])
		gamesOf = append(gamesOf, g.ID, g.ID)
		opponents = append(opponents, p[1], p[0])
		events = append(events, domain.Event{Name: domain.EventTournamentPairing, Data: Paired{GameID: g.ID,
			Players: []UserRef{{UserID: p[0], Username: names[p[0]]}, {UserID: p[1], Username: names[p[1]]}}}})
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tournament_players AS p SET current_game = v.g, last_game = v.g, last_opponent = v.o, waiting_since = NULL
		FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS v (u, g, o) WHERE p.tournament_id = ? AND p.user_id = v.u`,
		pgdialect.Array(users), pgdialect.Array(gamesOf), pgdialect.Array(opponents), t.ID); err != nil {
		return fmt.Errorf("record the pairings of tournament %s: %w", t.ID, err)
	}
	if err := s.appendEvents(ctx, tx, t.ID, now, events...); err != nil {
		return err
	}
	if s.Paired != nil {
		waited := make([]time.Duration, 0, len(users))
		for _, u := range users {
			if w := since[u]; w != nil {
				waited = append(waited, now.Sub(*w))
			}
		}
		if err := tx.AfterCommit(func() {
			for _, w := range waited {
				s.Paired(w)
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// sendStandings appends a tournament:standings event when the standings
// changed since the last one and that one is at least StandingsEvery old.
// Before the start they change only with joins and withdrawals (changed_at,
// written under the tournament's lock); while it runs, results change
// them too, so they are read again and compared with the last ones sent.
func (s *Service) sendStandings(ctx context.Context, tx db.Tx, t *Tournament, now time.Time) error {
	if t.StandingsAt != nil && now.Sub(*t.StandingsAt) < StandingsEvery {
		return nil
	}
	if t.Status == StatusScheduled && t.StandingsAt != nil && t.ChangedAt.Before(*t.StandingsAt) {
		return nil
	}
	st, err := s.standings(ctx, tx, t.ID, false)
	if err != nil {
		return err
	}
	data := Standings{Status: t.Status, PlayerCount: len(st), MaxPlayers: t.MaxPlayers, PrizePoolMinor: t.PrizePoolMinor,
		Standings: st[:min(len(st), StandingsRows)]}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write(raw)
	sum := int64(h.Sum64())
	if t.StandingsHash != nil && *t.StandingsHash == sum {
		t.StandingsAt = &now
		_, err := tx.NewUpdate().Model(t).Column("standings_at").WherePK().Exec(ctx)
		return err
	}
	if err := s.appendEvents(ctx, tx, t.ID, now, domain.Event{Name: domain.EventTournamentStandings, Data: data}); err != nil {
		return err
	}
	t.StandingsAt, t.StandingsHash = &now, &sum
	_, err = tx.NewUpdate().Model(t).Column("standings_at", "standings_hash").WherePK().Exec(ctx)
	return err
}

// finish ends a running tournament whose time is up and whose last game
// finished, in tx, which holds its row: the entrants' fees leave their
// locked balances and pay the prizes (Prizes) to the winners' available
// balances, the fee and what the floors leave to the treasury, in one
// balanced ledger transaction keyed by the tournament (a second one is
// refused by its reference); each winner is told (tournament_prize), the
// first place goes to the feed (tournament_won), and the room gets
// tournament:finished.
func (s *Service) finish(ctx context.Context, tx db.Tx, t *Tournament, now time.Time) error {
	st, err := s.standings(ctx, tx, t.ID, true)
	if err != nil {
		return err
	}
	var fees []struct {
		UserID string `bun:"user_id"`
		Fee    int64  `bun:"fee_minor"`
	}
	if err := tx.NewSelect().Table("tournament_players").Column("user_id", "fee_minor").
		Where("tournament_id = ? AND fee_minor > 0", t.ID).Scan(ctx, &fees); err != nil {
		return fmt.Errorf("read the entry fees of tournament %s: %w", t.ID, err)
	}
	pool := int64(0)
	for _, f := range fees {
		pool += f.Fee
	}
	if pool != t.PrizePoolMinor {
		return fmt.Errorf("tournament %s: its entries lock %d but its pool says %d", t.ID, pool, t.PrizePoolMinor)
	}
	payout := Prizes(pool, t.PrizeSplitBps, st)
	if pool > 0 {
		var entries []money.Entry
		for _, f := range fees {
			entries = append(entries, money.Entry{Account: money.Locked(f.UserID), Amount: -f.Fee})
		}
		for _, p := range payout.Prizes {
			entries = append(entries, money.Entry{Account: money.Available(p.UserID), Amount: p.AmountMinor})
		}
		if treasury := payout.FeeMinor + payout.FloorsMinor; treasury > 0 {
			entries = append(entries, money.Entry{Account: money.Treasury, Amount: treasury})
		}
		posted, err := money.Post(ctx, tx, s.tell, money.Posting{Kind: KindPrizes, Reference: "tournament:" + t.ID + ":prizes",
			Entries: entries, At: now})
		if err != nil {
			return fmt.Errorf("pay the prizes of tournament %s: %w", t.ID, err)
		}
		if !posted {
			return fmt.Errorf("tournament %s: its prizes were paid before it finished", t.ID)
		}
		for _, p := range payout.Prizes {
			if err := money.RecordActivity(ctx, tx, money.Activity{UserID: p.UserID, Kind: historyPrize, AmountMinor: p.AmountMinor,
				Counterparty: "tournament " + t.Name}, now); err != nil {
				return err
			}
		}
	}
	msgs := make([]notify.Message, 0, len(payout.Prizes))
	for _, p := range payout.Prizes {
		msgs = append(msgs, notify.Message{UserID: p.UserID, Type: notify.TournamentPrize, Data: PrizeNotice{TournamentID: t.ID,
			Name: t.Name, Rank: p.Rank, Players: len(st), AmountMinor: p.AmountMinor}})
	}
	if err := s.notify.SendMany(ctx, tx, msgs); err != nil {
		return fmt.Errorf("tell the winners of tournament %s: %w", t.ID, err)
	}
	if s.feed != nil && len(st) > 0 {
		won := map[string]int64{}
		for _, p := range payout.Prizes {
			won[p.UserID] = p.AmountMinor
		}
		for _, w := range st {
			if w.Rank != 1 {
				break
			}
			if err := s.feed.TournamentWon(ctx, tx, w.UserID, social.TournamentWon{TournamentID: t.ID, Name: t.Name, GameType: t.GameType,
				Players: len(st), Score: w.Score, PrizeMinor: won[w.UserID]}); err != nil {
				return fmt.Errorf("record the winner of tournament %s: %w", t.ID, err)
			}
		}
	}
	prizes, err := json.Marshal(payout.Prizes)
	if err != nil {
		return err
	}
	t.Status, t.FinishedAt, t.PrizesJSON, t.StandingsAt, t.ChangedAt = StatusFinished, &now, prizes, &now, now
	if _, err := tx.NewUpdate().Model(t).Column("status", "finished_at", "prizes", "standings_at", "changed_at").WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("finish tournament %s: %w", t.ID, err)
	}
	err = s.appendEvents(ctx, tx, t.ID, now, domain.Event{Name: domain.EventTournamentFinished, Data: Finished{Prizes: payout.Prizes,
		FeeMinor: payout.FeeMinor, Standings: st[:min(len(st), StandingsRows)]}})
	return err
}
