package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
)

// process is the server binary running as a process of its own.
type process struct {
	url  string // its API's base URL
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{} // closed when the process has exited
}

// buildServer builds the server binary into folder dir and returns its
// path.
func buildServer(dir string) (string, error) {
	bin := filepath.Join(dir, "server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build the server: %w\n%s", err, out)
	}
	return bin, nil
}

// startProcess runs the server binary with env (the whole environment)
// and waits until /health answers. The process is killed when the test
// ends; its log is shown when the test failed.
func startProcess(t *testing.T, bin string, env []string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin), done: make(chan struct{})}
	p.cmd.Env = env
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start the server: %v", err)
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("server log:\n%s", p.logs.String())
			p.mu.Unlock()
		}
	})
	addr := make(chan string, 1)
	go func() {
		listening := regexp.MustCompile(`msg=listening addr=(\S+)`)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			p.mu.Lock()
			p.logs.WriteString(lines.Text() + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				addr <- m[1]
			}
		}
		p.cmd.Wait()
		close(p.done)
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		t.Fatal("the server exited before it listened")
	case <-time.After(90 * time.Second):
		t.Fatal("the server did not listen within 90 s")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(p.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health did not answer 200 within 30 s: %v", err)
		}
	}
}

// kill ends the process at once (SIGKILL: nothing of it runs after) and
// waits until it is gone.
func (p *process) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// The server dies in the middle of a round and stays down past the
// round's deadline and past 10 s: when it is back, the round is still
// open with its full time, the player who had not chosen yet chooses,
// and the round is decided by the choices, not by the timer.
func TestACrashMidRoundCostsNoRound(t *testing.T) {
	ctx := t.Context()
	// The build runs while the database is made.
	dir := t.TempDir()
	var bin string
	var buildErr error
	building := make(chan struct{})
	go func() { defer close(building); bin, buildErr = buildServer(dir) }()
	t.Cleanup(func() { <-building })
	env := []string{"DATABASE_URL=" + dbtest.Fresh(t), "DATA_DIR=" + t.TempDir(), "ADDR=127.0.0.1:0",
		"METRICS_ADDR=off", "JWT_SECRET=crash-test-secret-crash-test-secret",
		"MASTER_SEED=c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff", "AUTH_RATE_LIMIT=0"}
	const roundSeconds = 5
	<-building
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	before := startProcess(t, bin, env)

	ann, bob, gameID := startRPSGame(t, before.url, roundSeconds)
	annID, bobID := ann.UserID(), bob.UserID()
	if _, err := ann.API.PostGamesByIdActionsWithResponse(ctx, gameID, nil, api.GameAction{Type: "move", Move: moveBody(t, "rock")}); err != nil {
		t.Fatalf("ann chooses: %v", err)
	}
	st := state(t, ann, gameID)
	deadline := parseTime(t, st.Timer.Deadline)

	before.kill()
	killed := time.Now()
	if !killed.Before(deadline) {
		t.Fatalf("the server was killed at %v, after the round's deadline %v: the test needs it killed mid-round", killed, deadline)
	}
	// Down past the deadline and for longer than game.ResumeGap since
	// the last run of the deadline worker (before the kill).
	downUntil := killed.Add(game.ResumeGap + 500*time.Millisecond)
	if deadline.After(downUntil) {
		downUntil = deadline.Add(500 * time.Millisecond)
	}
	time.Sleep(time.Until(downUntil))

	after := startProcess(t, bin, env)
	back := time.Now()
	annToken, _ := ann.Token()
	bobToken, _ := bob.Token()
	// The players' sessions outlive the restart.
	var err error
	if bob, err = wager.New(after.url, wager.WithToken(bobToken)); err != nil {
		t.Fatal(err)
	}

	// The round is open, with its full time from when the server was back.
	st = state(t, bob, gameID)
	resumed := parseTime(t, st.Timer.Deadline)
	if st.Status != game.StatusActive || st.Round.Number != 1 || !st.Submitted[annID] || st.Submitted[bobID] ||
		!resumed.After(killed.Add(game.ResumeGap)) || resumed.After(time.Now().Add(roundSeconds*time.Second)) {
		t.Fatalf("after the restart: got status %s, round %d, submitted %v, deadline %v; want round 1 open, ann's choice made, "+
			"and a deadline %d s from the restart (about %v)", st.Status, st.Round.Number, st.Submitted, resumed, roundSeconds,
			back.Add(roundSeconds*time.Second))
	}
	wantLastEventResumed(t, bob, gameID, resumed)
	// The game page of a signed-in viewer runs its clock to the new
	// deadline.
	wantPageClock(t, after.url, gameID, annToken, resumed)

	// Bob chooses: the round is decided by the choices.
	moved, err := bob.API.PostGamesByIdActionsWithResponse(ctx, gameID, nil, api.GameAction{Type: "move", Move: moveBody(t, "paper")})
	if err != nil {
		t.Fatalf("bob chooses after the restart: %v", err)
	}
	if moved.JSON200.Status != game.StatusCompleted {
		t.Fatalf("bob's choice: got %+v, want the game completed", moved.JSON200)
	}
	meta, err := bob.API.GetGamesByIdWithResponse(ctx, gameID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		WinnerID *string          `json:"winnerId"`
		History  []rules.RPSRound `json:"history"`
	}
	if err := json.Unmarshal(meta.Body, &m); err != nil {
		t.Fatal(err)
	}
	if m.WinnerID == nil || *m.WinnerID != bobID || len(m.History) != 1 || m.History[0].Reason != "played" {
		t.Errorf("the game: got winner %v, history %+v; want bob's paper to beat ann's rock in a played round", m.WinnerID, m.History)
	}
}

// startRPSGame signs two new wallets in at the server at url and matches
// them in a one-round rps game of roundSeconds, and returns them, ann
// first, and the game's id.
func startRPSGame(t *testing.T, url string, roundSeconds int) (ann, bob *wager.Client, gameID string) {
	t.Helper()
	ctx := t.Context()
	for _, c := range []**wager.Client{&ann, &bob} {
		var err error
		if *c, err = wager.New(url, wager.WithWallet(solana.NewWallet().PrivateKey)); err != nil {
			t.Fatal(err)
		}
		if err := (*c).SignIn(ctx); err != nil {
			t.Fatalf("sign in: %v", err)
		}
	}
	settings := map[string]any{"rounds": 1, "roundSeconds": roundSeconds}
	lobby, err := ann.API.PostLobbiesWithResponse(ctx, nil, api.LobbyRequest{GameType: "rps", Settings: wager.Settings(settings)})
	if err != nil {
		t.Fatalf("open a lobby: %v", err)
	}
	lobbyID := lobby.JSON201.Id
	if _, err := ann.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobbyID, nil); err != nil {
		t.Fatalf("ann joins the queue: %v", err)
	}
	joined, err := bob.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobbyID, nil)
	if err != nil || joined.JSON200.GameId == nil {
		t.Fatalf("bob joins the queue: %v, want a game", err)
	}
	return ann, bob, *joined.JSON200.GameId
}

// wantLastEventResumed checks that the game's last event is game:resumed
// with the deadline resumed.
func wantLastEventResumed(t *testing.T, c *wager.Client, gameID string, resumed time.Time) {
	t.Helper()
	events, err := c.API.GetGamesByIdEventsWithResponse(t.Context(), gameID, &api.GetGamesByIdEventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Events []struct {
			Event domain.EventName `json:"event"`
			Data  json.RawMessage  `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(events.Body, &page); err != nil {
		t.Fatal(err)
	}
	last := page.Events[len(page.Events)-1]
	var data game.Resumed
	if err := json.Unmarshal(last.Data, &data); err != nil || last.Event != domain.EventGameResumed || !data.Deadline.Equal(resumed) {
		t.Errorf("last event: got %s %s, want game:resumed with the deadline %v", last.Event, last.Data, resumed)
	}
}

// wantPageClock checks that the game page, as the holder of token sees it,
// runs its clock to the deadline resumed.
func wantPageClock(t *testing.T, url, gameID, token string, resumed time.Time) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/game/"+gameID, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-App-Id", wager.DefaultAppID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf(`data-deadline="%s"`, resumed.UTC().Format(time.RFC3339Nano)); !bytes.Contains(html, []byte(want)) {
		t.Errorf("the game page's clock: no %s in the page (status %d)", want, resp.StatusCode)
	}
}

// state reads the state of an rps game.
func state(t *testing.T, c *wager.Client, gameID string) rules.RPSView {
	t.Helper()
	r, err := c.API.GetGamesByIdStateWithResponse(context.Background(), gameID, nil)
	if err != nil {
		t.Fatalf("read the state of game %s: %v", gameID, err)
	}
	var st rules.RPSView
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func parseTime(t *testing.T, s *string) time.Time {
	t.Helper()
	if s == nil {
		t.Fatal("no deadline")
	}
	at, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// moveBody is a move as the body of a move action.
func moveBody(t testing.TB, move any) *api.GameMove {
	t.Helper()
	m, err := wager.MoveOf(move)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
