package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"time"

	"wager/e2e/apiclient"
)

// rpsSettings are the settings of a rock-paper-scissors lobby.
type rpsSettings struct {
	Rounds       int `json:"rounds"`
	RoundSeconds int `json:"roundSeconds"`
}

// endless are settings under which both players choosing the same keeps
// a game going (drawn rounds are replayed) and the round timer does not
// end it during a run.
var endless = rpsSettings{Rounds: 9, RoundSeconds: 120}

type lobbyRequest struct {
	GameType   string      `json:"gameType"`
	StakeMinor int64       `json:"stakeMinor"`
	Settings   rpsSettings `json:"settings"`
}

type lobbyAnswer struct {
	ID string `json:"id"`
}

type joinAnswer struct {
	Status string `json:"status"`
	GameID string `json:"gameId"`
}

// actionRequest is the body of POST /games/:id/actions.
type actionRequest struct {
	Type string `json:"type"`
	Move string `json:"move,omitempty"`
}

func move(choice string) actionRequest { return actionRequest{Type: "move", Move: choice} }

var resign = actionRequest{Type: "resign"}

type actionAnswer struct {
	Accepted bool   `json:"accepted"`
	Status   string `json:"status"`
	Seq      int    `json:"seq"`
}

// startGame has a open a free rps lobby and a then b join its queue; it
// answers the new game's id and the time from creating the lobby to the
// second join answering "matched".
func startGame(ctx context.Context, a, b *apiclient.Client, s rpsSettings) (string, time.Duration, error) {
	start := time.Now()
	var l lobbyAnswer
	if err := a.Do(ctx, http.MethodPost, "/lobbies", lobbyRequest{GameType: "rps", StakeMinor: 0, Settings: s}, &l); err != nil {
		return "", 0, fmt.Errorf("creating a lobby: %w", err)
	}
	var ja, jb joinAnswer
	if err := a.Do(ctx, http.MethodPost, "/lobbies/"+l.ID+"/join-queue", nil, &ja); err != nil {
		return "", 0, fmt.Errorf("joining the queue of lobby %s: %w", l.ID, err)
	}
	if ja.Status != "queued" {
		return "", 0, fmt.Errorf("first join of the new lobby %s answered %q, want queued", l.ID, ja.Status)
	}
	err := b.Do(ctx, http.MethodPost, "/lobbies/"+l.ID+"/join-queue", nil, &jb)
	if err == nil && (jb.Status != "matched" || jb.GameID == "") {
		err = fmt.Errorf("answered %q without a game, want matched", jb.Status)
	}
	if err != nil {
		// The first player must not stay queued there (best effort).
		_ = a.Do(ctx, http.MethodDelete, "/lobbies/"+l.ID+"/join-queue", nil, nil)
		return "", 0, fmt.Errorf("joining the queue of lobby %s as the second player: %w", l.ID, err)
	}
	return jb.GameID, time.Since(start), nil
}

// currentGame is GET /users/me/current-game.
type currentGame struct {
	GameID string `json:"gameId"`
}

// freePlayers resigns any game the players are in (best effort, errors
// ignored): a start whose answer was lost may have started one, and the
// pair must be free to start again.
func freePlayers(ctx context.Context, players ...*apiclient.Client) {
	for _, p := range players {
		var cg currentGame
		if err := p.Do(ctx, http.MethodGet, "/users/me/current-game", nil, &cg); err == nil && cg.GameID != "" {
			_, _, _ = act(ctx, p, cg.GameID, resign)
		}
	}
}

// actionRecord is one accepted action: when its request was written (the
// moment the events it causes start their way to spectators), when the
// call began and ended, and the game's last event seq after it.
type actionRecord struct {
	start, sent, end time.Duration
	seq              int
}

// act posts an action of c in a game. The record's sent is when the
// request was fully written to the connection.
func act(ctx context.Context, c *apiclient.Client, gameID string, a actionRequest) (actionRecord, actionAnswer, error) {
	var rec actionRecord
	var mu sync.Mutex
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		mu.Lock()
		rec.sent = now()
		mu.Unlock()
	}}
	var out actionAnswer
	rec.start = now()
	err := c.Do(httptrace.WithClientTrace(ctx, trace), http.MethodPost, "/games/"+gameID+"/actions", a, &out)
	mu.Lock()
	defer mu.Unlock()
	rec.end = now()
	if rec.sent == 0 {
		rec.sent = rec.start
	}
	rec.seq = out.Seq
	if err != nil {
		return rec, out, fmt.Errorf("posting %s in game %s: %w", a.Type, gameID, err)
	}
	return rec, out, nil
}

// gameLog is what the players of one game did, for matching spectators'
// frames to the actions that caused them.
type gameLog struct {
	id string

	mu      sync.Mutex
	actions []actionRecord
	lastSeq int // the game's last event seq when the run stopped looking
}

func newGameLog(id string) *gameLog { return &gameLog{id: id} }

// add records an accepted action.
func (g *gameLog) add(r actionRecord) {
	g.mu.Lock()
	g.actions = append(g.actions, r)
	g.mu.Unlock()
}

// setLastSeq records the game's final position for delivery counting.
func (g *gameLog) setLastSeq(seq int) {
	g.mu.Lock()
	g.lastSeq = max(g.lastSeq, seq)
	g.mu.Unlock()
}

// snapshot returns a copy of the actions ordered by seq, and the last seq.
func (g *gameLog) snapshot() ([]actionRecord, int) {
	g.mu.Lock()
	acts := slices.Clone(g.actions)
	last := g.lastSeq
	g.mu.Unlock()
	slices.SortFunc(acts, func(a, b actionRecord) int { return a.seq - b.seq })
	for _, a := range acts {
		last = max(last, a.seq)
	}
	return acts, last
}

// gameMeta is the part of GET /games/:id loadtest reads.
type gameMeta struct {
	Status  string `json:"status"`
	LastSeq int    `json:"lastSeq"`
}

// fetchLastSeqs reads every game's last event seq into its log, conc at a
// time. A failed read leaves the log to what its actions and frames show.
func fetchLastSeqs(ctx context.Context, c *apiclient.Client, games []*gameLog, conc int, errs *Errors) {
	_ = forEach(ctx, len(games), conc, func(ctx context.Context, i int) error {
		var m gameMeta
		if err := c.Do(ctx, http.MethodGet, "/games/"+games[i].id, nil, &m); err != nil {
			errs.Add("final GET /games/:id: " + errorKind(err))
			return nil
		}
		games[i].setLastSeq(m.LastSeq)
		return nil
	})
}

// seat is a player in a game.
type seat struct {
	gameID string
	player *apiclient.Client
}

// resignAll ends the given games (best effort, errors ignored): a run
// leaves no game going.
func resignAll(ctx context.Context, seats []seat, conc int) {
	_ = forEach(ctx, len(seats), conc, func(ctx context.Context, i int) error {
		_, _, _ = act(ctx, seats[i].player, seats[i].gameID, resign)
		return nil
	})
}
