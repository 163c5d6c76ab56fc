package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// The bare server is the reference the read endpoints are compared with:
// Echo with no middleware, no database and no work but encoding fixed
// values shaped like the real answers. Its figures are the floor of HTTP
// plus JSON on the machine running loadtest.

// bareSeat is a player in a game, as the API lists them.
type bareSeat struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
	Seat     int    `json:"seat"`
}

// bareLiveGame is one entry of GET /games/live.
type bareLiveGame struct {
	GameID         string     `json:"gameId"`
	GameType       string     `json:"gameType"`
	Status         string     `json:"status"`
	Players        []bareSeat `json:"players"`
	StakeMinor     int64      `json:"stakeMinor"`
	PotMinor       int64      `json:"potMinor"`
	SpectatorCount int        `json:"spectatorCount"`
	CreatedAt      time.Time  `json:"createdAt"`
}

// barePot is the pot member of GET /games/:id.
type barePot struct {
	PlayerPotMinor    int64 `json:"playerPotMinor"`
	SpectatorPotMinor int64 `json:"spectatorPotMinor"`
	TotalMinor        int64 `json:"totalMinor"`
	FeeBps            int   `json:"feeBps"`
	FeeMinor          int64 `json:"feeMinor"`
	WinnerGetsMinor   int64 `json:"winnerGetsMinor"`
}

// bareGame is GET /games/:id of an active game.
type bareGame struct {
	GameID         string          `json:"gameId"`
	GameType       string          `json:"gameType"`
	Status         string          `json:"status"`
	Players        []bareSeat      `json:"players"`
	StakeMinor     int64           `json:"stakeMinor"`
	Settings       json.RawMessage `json:"settings"`
	CreatedAt      time.Time       `json:"createdAt"`
	SpectatorCount int             `json:"spectatorCount"`
	LastSeq        int             `json:"lastSeq"`
	EscrowAddress  string          `json:"escrowAddress"`
	Pot            barePot         `json:"pot"`
	Settlement     []struct{}      `json:"settlement"`
}

func bareSeats(i int) []bareSeat {
	return []bareSeat{
		{UserID: uuid.NewString(), Username: fmt.Sprintf("player%05da", i), Seat: 0},
		{UserID: uuid.NewString(), Username: fmt.Sprintf("player%05db", i), Seat: 1},
	}
}

// bareLiveGames returns n live games.
func bareLiveGames(n int) []bareLiveGame {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	out := make([]bareLiveGame, n)
	for i := range out {
		out[i] = bareLiveGame{GameID: uuid.NewString(), GameType: "rps", Status: "active", Players: bareSeats(i),
			SpectatorCount: n - i, CreatedAt: created.Add(time.Duration(i) * time.Second)}
	}
	return out
}

// newBareHandler returns the reference Echo server: GET /games/live with
// 100 fixed games and GET /games/:id with one fixed game.
func newBareHandler() *echo.Echo {
	live := bareLiveGames(100)
	game := bareGame{GameID: live[0].GameID, GameType: "rps", Status: "active", Players: live[0].Players,
		Settings: json.RawMessage(`{"rounds":9,"roundSeconds":120}`), CreatedAt: live[0].CreatedAt, SpectatorCount: 1,
		LastSeq: 7, EscrowAddress: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
		Pot: barePot{FeeBps: 100}, Settlement: []struct{}{}}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/games/live", func(c echo.Context) error { return c.JSON(http.StatusOK, live) })
	e.GET("/games/:id", func(c echo.Context) error { return c.JSON(http.StatusOK, game) })
	return e
}

// bareServer is the reference server running on a loopback port.
type bareServer struct {
	URL string
	srv *http.Server
}

// startBare serves the reference handler on a free loopback port.
func startBare() (*bareServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the bare reference server: %w", err)
	}
	srv := &http.Server{Handler: newBareHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "loadtest: bare reference server: %v\n", err)
		}
	}()
	return &bareServer{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

// Close stops the reference server.
func (b *bareServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.srv.Shutdown(ctx)
}
