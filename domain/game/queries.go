package game

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
	"wager/domain/game/rules"
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
	Bot      bool   `json:"bot,omitempty" bun:"bot" doc:"true for a bot account (absent for a person's, and in game:started)"`
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
		ColumnExpr("p.game_id, p.user_id, u.username, p.seat, u.bot_account AS bot").Where("p.game_id IN (?)", bun.List(gameIDs)).
		Order("p.game_id", "p.seat").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read the players of %d games: %w", len(gameIDs), err)
	}
	for _, r := range rows {
		out[r.GameID] = append(out[r.GameID], r.Seat)
	}
	return out, nil
}

// Meta is a game's public metadata.
type Meta struct {
	GameID         string          `json:"gameId"`
	GameType       string          `json:"gameType" enum:"connect4,rps"`
	Status         string          `json:"status" enum:"waiting,active,completed,cancelled"`
	Players        []Seat          `json:"players"`
	StakeMinor     int64           `json:"stakeMinor"`
	Settings       json.RawMessage `json:"settings" schema:"GameSettings" doc:"the game type's settings"`
	CreatedAt      time.Time       `json:"createdAt"`
	EndedAt        *time.Time      `json:"endedAt,omitempty"`
	WinnerID       *string         `json:"winnerId,omitempty"`
	Result         *Result         `json:"result,omitempty" doc:"once the game is over"`
	History        any             `json:"history,omitempty" schema:"GameHistory" doc:"once the game is over: every revealed round (rps) or move (connect4)"`
	SpectatorCount int             `json:"spectatorCount"`
	LastSeq        int             `json:"lastSeq"`
	// TournamentID is the tournament the game is played in.
	TournamentID *string `json:"tournamentId,omitempty" doc:"the tournament the game is played in, when it is a tournament's (a free game)"`
}

// Live is what this instance knows live, outside the database: who
// watches (presence) and the newest event heard of each game.
type Live interface {
	Spectators(gameID string) int
	TotalSpectators() int
	LatestSeq(gameID string) (int, bool)
}

// Metadata returns a game's public metadata, with its result and history
// once it is over. NOT_FOUND when there is no such game.
func (s *Service) Metadata(ctx context.Context, id string) (Meta, error) {
	m, _, err := s.Snapshot(ctx, id)
	return m, err
}

// Snapshot returns a game's metadata and its public view whatever its
// status (pages show finished games too). NOT_FOUND when there is none.
func (s *Service) Snapshot(ctx context.Context, id string) (Meta, rules.View, error) {
	g, err := s.Game(ctx, id)
	if err != nil {
		return Meta{}, nil, err
	}
	view, err := s.stateOf(g)
	if err != nil {
		return Meta{}, nil, err
	}
	m := Meta{GameID: g.ID, GameType: g.GameType, Status: g.Status, Players: g.Seats, StakeMinor: g.StakeMinor,
		Settings: g.Settings, CreatedAt: g.CreatedAt, EndedAt: g.EndedAt, WinnerID: g.WinnerID, Result: g.Result,
		SpectatorCount: s.live.Spectators(g.ID), LastSeq: g.Seq, TournamentID: g.TournamentID}
	if g.Status == StatusCompleted || g.Status == StatusCancelled {
		m.History = view.Record()
	}
	return m, view, nil
}

// PublicState returns the state of an active game as everyone may see it
// (the same for players and spectators). NOT_FOUND, or GAME_NOT_ACTIVE when
// the game is not active.
func (s *Service) PublicState(ctx context.Context, id string) (rules.View, error) {
	g, err := s.Game(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.ActiveState(g)
}

// ActiveState is PublicState of a game already read (GAME_NOT_ACTIVE when
// it is not active).
func (s *Service) ActiveState(g Game) (rules.View, error) {
	if g.Status != StatusActive {
		return nil, domain.Errorf(domain.CodeGameNotActive, "the game is %s", g.Status).With("status", g.Status)
	}
	return s.stateOf(g)
}

func (s *Service) stateOf(g Game) (rules.View, error) {
	r, err := rulesOf(g.GameType)
	if err != nil {
		return nil, err
	}
	st, err := r.Load(g.State)
	if err != nil {
		return nil, fmt.Errorf("game %s: %w", g.ID, err)
	}
	view := st.Public(s.now())
	view.Base().ViewHeader = rules.ViewHeader{GameID: g.ID, GameType: g.GameType, Status: g.Status, Seq: g.Seq}
	return view, nil
}

// Game reads a game with its players (Players and Seats), without locking
// it: from memory while no event happened in it since it was read, else
// in one query. NOT_FOUND when there is none. The game is the caller's to
// keep but not to change.
func (s *Service) Game(ctx context.Context, id string) (Game, error) {
	return s.game(ctx, id, false)
}

// GameAtLeast is Game, read from the database when the instance's copy
// is older than seq: another instance may have committed events this one
// has not heard of yet, which a client already holds.
func (s *Service) GameAtLeast(ctx context.Context, id string, seq int) (Game, error) {
	g, err := s.game(ctx, id, false)
	if err != nil || g.Seq >= seq {
		return g, err
	}
	return s.game(ctx, id, true)
}

// game is Game, read from the database when fresh is set.
func (s *Service) game(ctx context.Context, id string, fresh bool) (Game, error) {
	var g Game
	id, ok := domain.CanonicalID(id)
	if !ok {
		return g, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	now := time.Now()
	if g, ok := s.rows.Get(id, now); ok && !fresh {
		return g, nil
	}
	seats, known := s.seatCache.get(id)
	q := s.db.NewSelect().Model(&g).ColumnExpr("g.*").Where("g.id = ?", id)
	if !known { // the seats never change: read once per game
		q = q.ColumnExpr(`(SELECT coalesce(json_agg(json_build_object('userId', p.user_id, 'username', u.username, 'seat', p.seat, 'bot', u.bot_account)
			ORDER BY p.seat), '[]') FROM game_players AS p JOIN users AS u ON u.id = p.user_id WHERE p.game_id = g.id) AS seats`)
	}
	if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return g, domain.Errorf(domain.CodeNotFound, "no such game")
	} else if err != nil {
		return g, fmt.Errorf("read game %s: %w", id, err)
	}
	if known {
		g.Seats = seats
	} else {
		s.seatCache.put(id, g.Seats)
	}
	g.Players = make([]string, len(g.Seats))
	for i, p := range g.Seats {
		g.Players[i] = p.UserID
	}
	s.rows.Put(id, g.Seq, g, now)
	return g, nil
}

// gameAfter returns the game as the instance remembers it, unless that is
// the row at seq tried, or else as read now; fresh reports a read.
func (s *Service) gameAfter(ctx context.Context, id string, tried int) (g Game, fresh bool, err error) {
	if id, ok := domain.CanonicalID(id); ok {
		if g, ok := s.rows.Get(id, time.Now()); ok && g.Seq != tried {
			return g, false, nil
		}
	}
	g, err = s.game(ctx, id, true)
	return g, true, err
}

// seatCache keeps every game's seats, which never change once it starts.
type seatCache struct {
	mu sync.Mutex
	m  map[string][]Seat
}

func (c *seatCache) get(gameID string) ([]Seat, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seats, ok := c.m[gameID]
	return seats, ok
}

func (c *seatCache) put(gameID string, seats []Seat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 100_000 {
		c.m = map[string][]Seat{}
	}
	c.m[gameID] = seats
}

// LiveGame is an active game in the live list.
type LiveGame struct {
	GameID         string    `json:"gameId" bun:"id"`
	GameType       string    `json:"gameType" bun:"game_type" enum:"connect4,rps"`
	Status         string    `json:"status" bun:"status" enum:"active" doc:"active: the list holds running games only"`
	Players        []Seat    `json:"players" bun:"-"`
	StakeMinor     int64     `json:"stakeMinor" bun:"stake_minor"`
	PotMinor       int64     `json:"potMinor" bun:"donated" doc:"player pot plus donations"`
	SpectatorCount int       `json:"spectatorCount" bun:"-"`
	CreatedAt      time.Time `json:"createdAt" bun:"created_at"`
	// TournamentID is the tournament the game is played in.
	TournamentID *string `json:"tournamentId,omitempty" bun:"tournament_id" doc:"the tournament the game is played in, when it is a tournament's"`
}

// Live lists active games, most watched first (newest first among equals),
// at most limit.
func (s *Service) Live(ctx context.Context, limit int) ([]LiveGame, error) {
	out := []LiveGame{}
	if err := s.db.NewSelect().TableExpr("games AS g").ColumnExpr("g.id, g.game_type, g.status, g.stake_minor, g.created_at, g.tournament_id").
		ColumnExpr("(SELECT coalesce(sum(d.amount_minor), 0) FROM donations AS d WHERE d.game_id = g.id AND NOT d.late) AS donated").
		Where("g.status = 'active'").Order("g.created_at DESC").Limit(int64(limit)).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("list live games: %w", err)
	}
	ids := make([]string, len(out))
	for i, g := range out {
		ids[i] = g.GameID
	}
	seats, err := s.seats(ctx, ids...)
	if err != nil {
		return nil, err
	}
	for i := range out {
		g := &out[i]
		g.Players = seats[g.GameID]
		g.PotMinor += g.StakeMinor * int64(len(g.Players)) // read as the donations
		g.SpectatorCount = s.live.Spectators(g.GameID)
	}
	slices.SortStableFunc(out, func(a, b LiveGame) int { return b.SpectatorCount - a.SpectatorCount })
	return out, nil
}

// LivePlayer is a user playing an active game.
type LivePlayer struct {
	UserID         string `json:"userId"`
	Username       string `json:"username"`
	GameID         string `json:"gameId"`
	GameType       string `json:"gameType" enum:"connect4,rps"`
	SpectatorCount int    `json:"spectatorCount"`
}

// PlayersOf lists everyone in the live games, one entry per user.
func PlayersOf(games []LiveGame) []LivePlayer {
	out := []LivePlayer{}
	for _, g := range games {
		for _, p := range g.Players {
			out = append(out, LivePlayer{UserID: p.UserID, Username: p.Username, GameID: g.GameID,
				GameType: g.GameType, SpectatorCount: g.SpectatorCount})
		}
	}
	return out
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
	m := Metrics{Spectators: s.live.TotalSpectators()}
	since := s.now().Add(-24 * time.Hour)
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM games WHERE status = 'active'),
		(SELECT count(*) FROM user_presence WHERE kind = 'game'),
		(SELECT count(*) FROM games WHERE created_at > ?),
		(SELECT coalesce(sum(g.stake_minor * (SELECT count(*) FROM game_players p WHERE p.game_id = g.id)), 0)
			FROM games g WHERE g.created_at > ?)`, since, since).
		Scan(&m.ActiveGames, &m.PlayersInGames, &m.GamesLast24h, &m.VolumeLast24hMinor)
	if err != nil {
		return m, fmt.Errorf("compute the platform metrics: %w", err)
	}
	return m, nil
}

// CurrentGame is the active game a user is in.
type CurrentGame struct {
	GameID   string `json:"gameId"`
	GameType string `json:"gameType" enum:"connect4,rps"`
}

// CurrentGameOf returns the user's active game, or nil. NOT_FOUND when
// there is no such user.
func (s *Service) CurrentGameOf(ctx context.Context, userID string) (*CurrentGame, error) {
	userID, ok := domain.CanonicalID(userID)
	if !ok {
		return nil, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	var gameID, gameType sql.NullString
	err := s.db.NewRaw(`SELECT g.id, g.game_type FROM users AS u
		LEFT JOIN user_presence AS p ON p.user_id = u.id AND p.kind = 'game' LEFT JOIN games AS g ON g.id = p.game_id
		WHERE u.id = ?`, userID).Scan(ctx, &gameID, &gameType)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	if err != nil {
		return nil, fmt.Errorf("read the current game of %s: %w", userID, err)
	}
	if !gameID.Valid {
		return nil, nil
	}
	cg := CurrentGame{GameID: gameID.String, GameType: gameType.String}
	return &cg, nil
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
	if err != nil {
		return nil, fmt.Errorf("list recent wins: %w", err)
	}
	return out, nil
}

// StakedAndActiveBefore reports whether a game is staked, active, and none
// of the events named happened in it yet (the bets on a game close at the
// first of them), read in idb. NOT_FOUND when there is no such game.
func StakedAndActiveBefore(ctx context.Context, idb bun.IDB, gameID string, names []domain.EventName) (bool, error) {
	var open bool
	err := idb.QueryRowContext(ctx, `SELECT g.status = ? AND g.stake_minor > 0 AND NOT EXISTS (SELECT 1 FROM game_events e WHERE e.game_id = g.id
		AND e.name IN (?))
		FROM games g WHERE g.id = ?`, StatusActive, bun.List(names), gameID).Scan(&open)
	if errors.Is(err, sql.ErrNoRows) {
		return false, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	return open, err
}
