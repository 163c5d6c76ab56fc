package game

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
)

func ignoreNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// Seat is a player as lists show them.
type Seat struct {
	UserID   string `json:"userId" bun:"user_id"`
	Username string `json:"username" bun:"username"`
	Seat     int    `json:"seat" bun:"seat"`
}

func (s *Service) seats(ctx context.Context, gameIDs ...string) (map[string][]Seat, error) {
	out := map[string][]Seat{}
	if len(gameIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		GameID string `bun:"game_id"`
		Seat
	}
	err := s.db.NewSelect().TableExpr("game_players AS p").Join("JOIN users AS u ON u.id = p.user_id").
		ColumnExpr("p.game_id, p.user_id, u.username, p.seat").Where("p.game_id IN (?)", bun.In(gameIDs)).
		Order("p.game_id", "p.seat").Scan(ctx, &rows)
	for _, r := range rows {
		out[r.GameID] = append(out[r.GameID], r.Seat)
	}
	return out, err
}

// Meta is a game's public metadata.
type Meta struct {
	GameID         string          `json:"gameId"`
	GameType       string          `json:"gameType"`
	Status         string          `json:"status"`
	Players        []Seat          `json:"players"`
	StakeMinor     int64           `json:"stakeMinor"`
	Settings       json.RawMessage `json:"settings"`
	CreatedAt      time.Time       `json:"createdAt"`
	EndedAt        *time.Time      `json:"endedAt,omitempty"`
	WinnerID       *string         `json:"winnerId,omitempty"`
	Result         json.RawMessage `json:"result,omitempty" doc:"once completed: winnerId, reason, draw, potMinor, feeMinor, payoutMinor..."`
	History        any             `json:"history,omitempty" doc:"once completed: every revealed round or move"`
	SpectatorCount int             `json:"spectatorCount"`
	LastSeq        int             `json:"lastSeq"`
}

// Metadata returns a game's public metadata, with its result and history
// once it is over. NOT_FOUND when there is no such game.
func (s *Service) Metadata(ctx context.Context, id string) (Meta, error) {
	g, err := loadGame(ctx, s.db, id, false)
	if err != nil {
		return Meta{}, err
	}
	seats, err := s.seats(ctx, g.ID)
	if err != nil {
		return Meta{}, err
	}
	counts, err := s.spectatorCounts(ctx, g.ID)
	if err != nil {
		return Meta{}, err
	}
	m := Meta{GameID: g.ID, GameType: g.GameType, Status: g.Status, Players: seats[g.ID], StakeMinor: g.StakeMinor,
		Settings: g.Settings, CreatedAt: g.CreatedAt, EndedAt: g.EndedAt, WinnerID: g.WinnerID, Result: g.Result,
		SpectatorCount: counts[g.ID], LastSeq: g.Seq}
	if g.Status == StatusCompleted || g.Status == StatusCancelled {
		r, err := rulesOf(g.GameType)
		if err != nil {
			return Meta{}, err
		}
		st, err := r.Load(g.State)
		if err != nil {
			return Meta{}, err
		}
		m.History = st.Public(s.now())["history"]
	}
	return m, nil
}

// PublicState returns the state of an active game as everyone may see it
// (the same for players and spectators). NOT_FOUND, or GAME_NOT_ACTIVE when
// the game is not active.
func (s *Service) PublicState(ctx context.Context, id string) (map[string]any, error) {
	g, err := loadGame(ctx, s.db, id, false)
	if err != nil {
		return nil, err
	}
	if g.Status != StatusActive {
		return nil, &domain.Error{Code: domain.CodeGameNotActive, Message: "the game is " + g.Status,
			Extra: map[string]any{"status": g.Status}}
	}
	return s.stateOf(g)
}

func (s *Service) stateOf(g Game) (map[string]any, error) {
	r, err := rulesOf(g.GameType)
	if err != nil {
		return nil, err
	}
	st, err := r.Load(g.State)
	if err != nil {
		return nil, err
	}
	view := st.Public(s.now())
	view["gameId"], view["gameType"], view["status"], view["seq"] = g.ID, g.GameType, g.Status, g.Seq
	return view, nil
}

// LiveGame is an active game in the live list.
type LiveGame struct {
	GameID         string    `json:"gameId"`
	GameType       string    `json:"gameType"`
	Status         string    `json:"status"`
	Players        []Seat    `json:"players"`
	StakeMinor     int64     `json:"stakeMinor"`
	PotMinor       int64     `json:"potMinor" doc:"player pot plus donations"`
	SpectatorCount int       `json:"spectatorCount"`
	CreatedAt      time.Time `json:"createdAt"`
}

// Live lists active games, most watched first, at most limit.
func (s *Service) Live(ctx context.Context, limit int) ([]LiveGame, error) {
	var games []Game
	if err := s.db.NewSelect().Model(&games).Where("status = 'active'").Order("created_at DESC").
		Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	ids := make([]string, len(games))
	for i, g := range games {
		ids[i] = g.ID
	}
	seats, err := s.seats(ctx, ids...)
	if err != nil {
		return nil, err
	}
	counts, err := s.spectatorCounts(ctx, ids...)
	if err != nil {
		return nil, err
	}
	out := make([]LiveGame, len(games))
	for i, g := range games {
		out[i] = LiveGame{GameID: g.ID, GameType: g.GameType, Status: g.Status, Players: seats[g.ID],
			StakeMinor: g.StakeMinor, PotMinor: g.StakeMinor * int64(len(seats[g.ID])),
			SpectatorCount: counts[g.ID], CreatedAt: g.CreatedAt}
	}
	sortByViewers(out)
	return out, nil
}

func sortByViewers(games []LiveGame) {
	for i := 1; i < len(games); i++ {
		for j := i; j > 0 && games[j].SpectatorCount > games[j-1].SpectatorCount; j-- {
			games[j], games[j-1] = games[j-1], games[j]
		}
	}
}

// LivePlayer is a user playing an active game.
type LivePlayer struct {
	UserID         string `json:"userId"`
	Username       string `json:"username"`
	GameID         string `json:"gameId"`
	GameType       string `json:"gameType"`
	SpectatorCount int    `json:"spectatorCount"`
}

// LivePlayers lists everyone in an active game, one entry per user.
func (s *Service) LivePlayers(ctx context.Context, limit int) ([]LivePlayer, error) {
	games, err := s.Live(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := []LivePlayer{}
	for _, g := range games {
		for _, p := range g.Players {
			out = append(out, LivePlayer{UserID: p.UserID, Username: p.Username, GameID: g.GameID,
				GameType: g.GameType, SpectatorCount: g.SpectatorCount})
		}
	}
	return out, nil
}

// Metrics are the platform's real-time numbers.
type Metrics struct {
	ActiveGames        int   `json:"activeGames"`
	PlayersInGames     int   `json:"playersInGames"`
	Spectators         int   `json:"spectators"`
	GamesLast24h       int   `json:"gamesLast24h"`
	VolumeLast24hMinor int64 `json:"volumeLast24hMinor" doc:"stakes of the games started in the last 24 hours"`
}

// Metrics computes the real-time metrics.
func (s *Service) Metrics(ctx context.Context) (Metrics, error) {
	var m Metrics
	since := s.now().Add(-24 * time.Hour)
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM games WHERE status = 'active'),
		(SELECT count(*) FROM user_presence WHERE kind = 'game'),
		(SELECT coalesce(sum(v.viewers), 0) FROM game_viewers v JOIN games g ON g.id = v.game_id
			WHERE g.status = 'active' AND v.updated_at > ?),
		(SELECT count(*) FROM games WHERE created_at > ?),
		(SELECT coalesce(sum(g.stake_minor * (SELECT count(*) FROM game_players p WHERE p.game_id = g.id)), 0)
			FROM games g WHERE g.created_at > ?)`,
		s.now().Add(-viewerTTL), since, since).
		Scan(&m.ActiveGames, &m.PlayersInGames, &m.Spectators, &m.GamesLast24h, &m.VolumeLast24hMinor)
	return m, err
}

// CurrentGame is the active game a user is in.
type CurrentGame struct {
	GameID   string `json:"gameId"`
	GameType string `json:"gameType"`
}

// CurrentGameOf returns the user's active game, or nil. NOT_FOUND when
// userID is no user id.
func (s *Service) CurrentGameOf(ctx context.Context, userID string) (*CurrentGame, error) {
	userID, ok := domain.CanonicalID(userID)
	if !ok {
		return nil, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	var cg CurrentGame
	err := s.db.NewSelect().TableExpr("user_presence AS p").Join("JOIN games AS g ON g.id = p.game_id").
		ColumnExpr("g.id AS game_id, g.game_type").Where("p.user_id = ? AND p.kind = 'game'", userID).
		Scan(ctx, &cg.GameID, &cg.GameType)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &cg, nil
}

// IsPlayer reports whether the user plays in the game.
func (s *Service) IsPlayer(ctx context.Context, gameID, userID string) (bool, error) {
	return s.db.NewSelect().Model((*Player)(nil)).Where("game_id = ? AND user_id = ?", gameID, userID).Exists(ctx)
}

// Snapshot returns a game's metadata and its public view whatever its
// status (pages show finished games too). NOT_FOUND when there is none.
func (s *Service) Snapshot(ctx context.Context, id string) (Meta, map[string]any, error) {
	m, err := s.Metadata(ctx, id)
	if err != nil {
		return m, nil, err
	}
	g, err := loadGame(ctx, s.db, id, false)
	if err != nil {
		return m, nil, err
	}
	view, err := s.stateOf(g)
	return m, view, err
}

// Win is a finished game's payout, for the home page.
type Win struct {
	GameID      string    `bun:"id" json:"gameId"`
	GameType    string    `bun:"game_type" json:"gameType"`
	Winner      string    `bun:"winner" json:"winner"`
	PayoutMinor int64     `bun:"payout" json:"payoutMinor"`
	EndedAt     time.Time `bun:"ended_at" json:"endedAt"`
}

// RecentWins lists the biggest payouts of the last week.
func (s *Service) RecentWins(ctx context.Context, limit int) ([]Win, error) {
	out := []Win{}
	err := s.db.NewSelect().TableExpr("games AS g").Join("JOIN users AS u ON u.id = g.winner_id").
		ColumnExpr("g.id, g.game_type, u.username AS winner, (g.result->>'payoutMinor')::bigint AS payout, g.ended_at").
		Where("g.status = 'completed' AND g.ended_at > ? AND (g.result->>'payoutMinor')::bigint > 0", s.now().Add(-7*24*time.Hour)).
		OrderExpr("payout DESC, g.ended_at DESC").Limit(int64(limit)).Scan(ctx, &out)
	return out, err
}
