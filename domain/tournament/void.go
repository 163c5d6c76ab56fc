package tournament

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"wager/db"
	"wager/domain"
	"wager/domain/audit"
	"wager/domain/game"
	"wager/domain/game/rules"
)

// AuditVoid is the audit action of an arena game voided for integrity.
const AuditVoid = "tournament.void" // data: the Void

// Void is an arena game voided for integrity: the points it gave are taken
// back (Rescore), and once the prizes were paid, what they would be now.
type Void struct {
	TournamentID string    `json:"tournamentId"`
	GameID       string    `json:"gameId"`
	Reason       string    `json:"reason"`
	VoidedBy     UserRef   `json:"voidedBy"`
	At           time.Time `json:"at"`
	// Rescored are the lines of the players whose points the game gave,
	// before and after.
	Rescored []Rescored `json:"rescored" doc:"the players whose points the game gave (its winner, or both after a draw): their lines before and after; the loser of a won game keeps what they had"`
	// PrizeChanges is, once the prizes were paid, each player whose prize
	// would differ by the new standings; nothing is clawed back.
	PrizeChanges []PrizeChange `json:"prizeChanges" doc:"after the prizes were paid: each player whose prize the new standings would change (staff decide; nothing is clawed back); empty before"`
}

// Rescored is a player's standing before and after a void.
type Rescored struct {
	UserID string `json:"userId"`
	Before Record `json:"before"`
	After  Record `json:"after"`
}

// PrizeChange is what a player was paid and what the standings after a
// void would pay them.
type PrizeChange struct {
	UserID     string `json:"userId"`
	Username   string `json:"username"`
	PaidMinor  int64  `json:"paidMinor"`
	WouldMinor int64  `json:"wouldBeMinor"`
}

// VoidGame has staff (actorID) void an ended game of a tournament for
// integrity, with a reason for the record: the game's points are taken
// from the players it gave them to, their records scored again from
// their games in order without it (the streaks across it too), and
// standings and later pairings use the new scores. A tournament whose
// prizes were paid keeps them: the void shows what they would be now.
// Voiding it again answers the void unchanged. Errors: NOT_FOUND (no such
// tournament, or the game is not one of its ended games), VALIDATION_ERROR
// naming reason.
func (s *Service) VoidGame(ctx context.Context, actorID, tournamentID, gameID, reason string) (Void, error) {
	var out Void
	gid, ok := domain.CanonicalID(gameID)
	if !ok {
		return out, errNoGame
	}
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		t, err := s.lock(ctx, tx, tournamentID)
		if err != nil {
			return err
		}
		var prior json.RawMessage
		err = tx.QueryRowContext(ctx, "SELECT data FROM tournament_voids WHERE game_id = ?", gid).Scan(&prior)
		if err == nil {
			return json.Unmarshal(prior, &out)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the void of game %s: %w", gid, err)
		}
		var g game.Game
		err = tx.NewSelect().Model(&g).Where("id = ? AND tournament_id = ? AND status IN (?, ?)", gid, t.ID, game.StatusCompleted, game.StatusCancelled).
			Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoGame
		}
		if err != nil {
			return fmt.Errorf("read game %s: %w", gid, err)
		}
		if s.staff != nil {
			if err := s.staff.CheckStaff(ctx, tx, actorID, gid); err != nil {
				return err
			}
		}
		now := s.now()
		out = Void{TournamentID: t.ID, GameID: gid, Reason: reason, At: now, Rescored: []Rescored{}, PrizeChanges: []PrizeChange{}}
		if err := tx.QueryRowContext(ctx, "SELECT id, username FROM users WHERE id = ?", actorID).Scan(&out.VoidedBy.UserID, &out.VoidedBy.Username); err != nil {
			return fmt.Errorf("read the staff member %s: %w", actorID, err)
		}
		// The players the game gave points: its winner, or both after a draw.
		var scored []string
		if g.WinnerID != nil {
			scored = []string{*g.WinnerID}
		} else if g.Status == game.StatusCompleted {
			if err := tx.NewSelect().Table("game_players").Column("user_id").Where("game_id = ?", gid).Scan(ctx, &scored); err != nil {
				return fmt.Errorf("read the players of game %s: %w", gid, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO tournament_voids (game_id, tournament_id, at, data) VALUES (?, ?, ?, '{}')", gid, t.ID, now); err != nil {
			return fmt.Errorf("void game %s: %w", gid, err)
		}
		for _, u := range scored {
			r, err := s.rescore(ctx, tx, t.ID, u)
			if err != nil {
				return err
			}
			out.Rescored = append(out.Rescored, r)
		}
		if t.Status == StatusFinished {
			var paid []Prize
			if err := json.Unmarshal(t.PrizesJSON, &paid); err != nil {
				return fmt.Errorf("read the prizes of tournament %s: %w", t.ID, err)
			}
			after, err := s.standings(ctx, tx, t.ID, false)
			if err != nil {
				return err
			}
			out.PrizeChanges = prizeChanges(paid, Prizes(t.PrizePoolMinor, t.PrizeSplitBps, after).Prizes, after)
		}
		data, err := json.Marshal(out)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE tournament_voids SET data = ? WHERE game_id = ?", string(data), gid); err != nil {
			return fmt.Errorf("record the void of game %s: %w", gid, err)
		}
		t.ChangedAt = now
		if _, err := tx.NewUpdate().Model(&t).Column("changed_at").WherePK().Exec(ctx); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{ActorID: actorID, Action: AuditVoid, Target: audit.GameTarget(gid), Data: out, At: now})
	})
	if err != nil {
		return Void{}, fmt.Errorf("void game %s of tournament %s: %w", gameID, tournamentID, err)
	}
	return out, nil
}

var errNoGame = domain.Errorf(domain.CodeNotFound, "no such ended game in this tournament")

// Voids lists a tournament's voided games, the latest first. NOT_FOUND
// when there is no such tournament.
func (s *Service) Voids(ctx context.Context, tournamentID string) ([]Void, error) {
	id, ok := domain.CanonicalID(tournamentID)
	if !ok {
		return nil, errNoTournament
	}
	var rows []json.RawMessage
	if err := s.db.NewSelect().Table("tournament_voids").Column("data").Where("tournament_id = ?", id).
		OrderExpr("at DESC, game_id").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list the voids of tournament %s: %w", id, err)
	}
	if len(rows) == 0 {
		if _, err := s.Get(ctx, id); err != nil {
			return nil, err
		}
	}
	out := make([]Void, len(rows))
	for i, raw := range rows {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("read a void of tournament %s: %w", id, err)
		}
	}
	return out, nil
}

// rescore scores userID's record in a tournament again from their ended
// games in order, leaving out the voided ones they won or drew, and
// stores it.
func (s *Service) rescore(ctx context.Context, tx db.Tx, tournamentID, userID string) (Rescored, error) {
	// The player's row first, as a game's end locks it: a game ending now
	// is either among the games read below or scored after, on top.
	var before playerRecord
	if err := tx.NewSelect().Table("tournament_players").ColumnExpr(recordColumns).
		Where("tournament_id = ? AND user_id = ?", tournamentID, userID).For("UPDATE").Scan(ctx, &before); err != nil {
		return Rescored{}, fmt.Errorf("read the record of %s in tournament %s: %w", userID, tournamentID, err)
	}
	var games []struct {
		ID       string          `bun:"id"`
		GameType string          `bun:"game_type"`
		Status   string          `bun:"status"`
		State    json.RawMessage `bun:"state"`
		Voided   bool            `bun:"voided"`
	}
	err := tx.NewRaw(`SELECT g.id, g.game_type, g.status, g.state, EXISTS (SELECT 1 FROM tournament_voids AS v WHERE v.game_id = g.id) AS voided
		FROM games AS g JOIN game_players AS gp ON gp.game_id = g.id AND gp.user_id = ?
		WHERE g.tournament_id = ? AND g.status IN (?, ?) ORDER BY g.ended_at, g.id`,
		userID, tournamentID, game.StatusCompleted, game.StatusCancelled).Scan(ctx, &games)
	if err != nil {
		return Rescored{}, fmt.Errorf("read the games of %s in tournament %s: %w", userID, tournamentID, err)
	}
	results, voided := make([]Result, len(games)), make([]bool, len(games))
	for i, g := range games {
		r, ok := rules.Get(g.GameType)
		if !ok {
			return Rescored{}, fmt.Errorf("game %s: unknown game type %q", g.ID, g.GameType)
		}
		st, err := r.Load(g.State)
		if err != nil {
			return Rescored{}, fmt.Errorf("game %s: %w", g.ID, err)
		}
		results[i] = resultOf(g.GameType, g.Status == game.StatusCancelled, st.Outcome(), st, userID)
		voided[i] = g.Voided && results[i].Outcome != Loss // a voided game's loser keeps what they had
	}
	after := Rescore(results, voided)
	after.TimeLosses = before.TimeLosses // the pause's count is about playing, not points
	if _, err := tx.ExecContext(ctx, `UPDATE tournament_players SET score = ?, games = ?, wins = ?, draws = ?, losses = ?, streak = ?, berserks = ?
		WHERE tournament_id = ? AND user_id = ?`, after.Score, after.Games, after.Wins, after.Draws, after.Losses, after.Streak, after.Berserks,
		tournamentID, userID); err != nil {
		return Rescored{}, fmt.Errorf("store the record of %s in tournament %s: %w", userID, tournamentID, err)
	}
	return Rescored{UserID: userID, Before: before.record(), After: after}, nil
}

// resultOf is how an ended game scores for a player: a game nobody
// played (abandoned) is a loss for both; a lost game is lost on time when
// the player's own time ran out in it (rules.State.RanOutOfTime).
func resultOf(gameType string, abandoned bool, o rules.Outcome, st rules.State, userID string) Result {
	res := Result{Berserk: st.Berserked(userID), Long: st.Played(userID) >= BerserkMinimum[gameType]}
	switch {
	case abandoned:
	case o.Winner == userID:
		res.Outcome = Win
	case o.Winner == "":
		res.Outcome = Draw
	default:
		res.LostOnTime = st.RanOutOfTime(userID)
	}
	return res
}

// prizeChanges are the players whose prize differs between the prizes
// paid and those the standings would pay, in the order of the standings.
func prizeChanges(paid, would []Prize, st []Standing) []PrizeChange {
	amounts := func(p []Prize) map[string]int64 {
		m := map[string]int64{}
		for _, x := range p {
			m[x.UserID] = x.AmountMinor
		}
		return m
	}
	was, now := amounts(paid), amounts(would)
	out := []PrizeChange{}
	for _, line := range st {
		if was[line.UserID] != now[line.UserID] {
			out = append(out, PrizeChange{UserID: line.UserID, Username: line.Username, PaidMinor: was[line.UserID], WouldMinor: now[line.UserID]})
		}
	}
	return out
}
