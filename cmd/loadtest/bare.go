package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
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

// serveBareArg, as the only argument, makes this program serve the bare
// reference and nothing else: the reads scenario starts it so, as a
// process of its own, like the server it is compared with. Served from
// inside the load generator, the reference's requests never left one Go
// runtime and it measured about a quarter faster than the same handler
// in a process of its own.
const serveBareArg = "-serve-bare"

// serveBare serves the reference handler on a free loopback port, writes
// its URL as one line to out, and serves until in ends: the parent closed
// the pipe, or died.
func serveBare(in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening for the bare reference server: %w", err)
	}
	srv := &http.Server{Handler: newBareHandler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "http://%s\n", ln.Addr()); err != nil {
		return fmt.Errorf("telling the bare reference server's address: %w", err)
	}
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(ended) }()
	select {
	case err := <-served:
		return fmt.Errorf("bare reference server: %w", err)
	case <-ended:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

// bareServer is the reference server, a child process serving on a
// loopback port.
type bareServer struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.Closer // closing it stops the child
}

// startBare starts this program with serveBareArg and waits for the URL
// it serves at.
func startBare() (*bareServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start the bare reference server: %w", err)
	}
	cmd := exec.Command(exe, serveBareArg)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the bare reference server: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the bare reference server: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the bare reference server: %w", err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stdin.Close()
		return nil, errors.Join(fmt.Errorf("reading the bare reference server's address: %w", err), cmd.Wait())
	}
	return &bareServer{URL: strings.TrimSpace(line), cmd: cmd, stdin: stdin}, nil
}

// CPU is the CPU time the reference server has used.
func (b *bareServer) CPU() time.Duration { return processCPU(b.cmd.Process.Pid) }

// Close stops the reference server and waits for it to end.
func (b *bareServer) Close() error {
	b.stdin.Close()
	if err := b.cmd.Wait(); err != nil {
		return fmt.Errorf("bare reference server: %w", err)
	}
	return nil
}
