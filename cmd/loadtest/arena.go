package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"wager/domain"
	"wager/e2e/apiclient"
)

// ArenaResult is the arena scenario: many players in one tournament.
type ArenaResult struct {
	Players          int     `json:"players"`
	DurationMinutes  int     `json:"durationMinutes" doc:"the arena's length"`
	ThinkMs          float64 `json:"thinkMs"`
	RunningSeconds   float64 `json:"runningSeconds" doc:"from the arena's start to its end time"`
	FirstPairing     Latency `json:"firstPairing" doc:"per player: the arena's start to the player's first pairing frame"`
	EndToPairing     Latency `json:"endToPairing" doc:"per game end seen by a move's answer: the answer to the player's next pairing frame"`
	Unpaired         int     `json:"unpaired" doc:"game ends, more than 2 s before the arena's end, that no pairing followed"`
	Pairings         int     `json:"pairings" doc:"games the arena started while it ran"`
	PairingsPerSec   float64 `json:"pairingsPerSecond" doc:"over the running span"`
	PeakPairings     int     `json:"peakPairings" doc:"most pairings in any one second (the start's included)"`
	GamesCompleted   int     `json:"gamesCompleted" doc:"games whose end a move's answer reported"`
	Moves            int     `json:"moves"`
	MovePOST         Latency `json:"movePost"`
	Berserks         int     `json:"berserks" doc:"-berserk: berserks taken (POST /tournaments/:id/berserk before a player's first move)"`
	BerserkPOST      Latency `json:"berserkPost"`
	StandingsFrames  int     `json:"standingsFrames" doc:"tournament:standings frames the spectator socket received while the arena ran"`
	StandingsPerSec  float64 `json:"standingsPerSecond" doc:"over the running span"`
	StandingsPeak    int     `json:"standingsPeak" doc:"most standings frames in any one second (delivery jitter can make it 2 when they are sent a second apart)"`
	StandingsPeak10  int     `json:"standingsPeak10" doc:"most standings frames in any ten seconds"`
	StandingsMinGapM float64 `json:"standingsMinGapMs" doc:"shortest time between two standings frames"`
	Resyncs          int     `json:"resyncs" doc:"resync-tournament frames (the socket fell behind and rejoined)"`
	Finished         bool    `json:"finished" doc:"tournament:finished arrived"`
	CPU              *CPUUse `json:"cpu,omitempty" doc:"-cpu: the server's and PostgreSQL's CPU time while the arena ran"`
}

// arenaMeter matches the arena's events as the run sees them: a game's
// end (the answer to the move that ended it) and each player's next
// pairing (the tournament:pairing frame on the spectator socket), and
// keeps the times of the frames. Safe for concurrent use.
type arenaMeter struct {
	mu        sync.Mutex
	startedAt time.Duration            // the arena's start
	ended     map[string]time.Duration // per player: the end of the last game, until the next pairing
	played    map[string]bool          // players paired at least once
	first     []time.Duration          // start to first pairing
	waits     []time.Duration          // end to next pairing
	pairings  []time.Duration          // when each pairing frame arrived
	standings []time.Duration          // when each standings frame arrived
}

func newArenaMeter(startedAt time.Duration) *arenaMeter {
	return &arenaMeter{startedAt: startedAt, ended: map[string]time.Duration{}, played: map[string]bool{}}
}

// gameEnded notes that the players' game ended at at.
func (m *arenaMeter) gameEnded(players []string, at time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range players {
		m.ended[p] = at
	}
}

// paired notes a pairing frame of players that arrived at at: a wait for
// each player whose previous game's end was seen, or the first pairing.
func (m *arenaMeter) paired(players []string, at time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pairings = append(m.pairings, at)
	for _, p := range players {
		if end, ok := m.ended[p]; ok {
			m.waits = append(m.waits, at-end)
			delete(m.ended, p)
		} else if !m.played[p] {
			m.first = append(m.first, at-m.startedAt)
		}
		m.played[p] = true
	}
}

// standingsFrame notes a tournament:standings frame that arrived at at.
func (m *arenaMeter) standingsFrame(at time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.standings = append(m.standings, at)
}

// unpaired counts the game ends before before that no pairing followed.
func (m *arenaMeter) unpaired(before time.Duration) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, at := range m.ended {
		if at < before {
			n++
		}
	}
	return n
}

// maxInWindow returns the largest number of the sorted moments that fall
// in any span of length w (a moment at the span's end is outside it).
func maxInWindow(sorted []time.Duration, w time.Duration) int {
	best, from := 0, 0
	for to, at := range sorted {
		for at-sorted[from] >= w {
			from++
		}
		best = max(best, to-from+1)
	}
	return best
}

// minGap returns the shortest time between two consecutive sorted
// moments, or 0 with fewer than two.
func minGap(sorted []time.Duration) time.Duration {
	var gap time.Duration
	for i := 1; i < len(sorted); i++ {
		if d := sorted[i] - sorted[i-1]; i == 1 || d < gap {
			gap = d
		}
	}
	return gap
}

// within returns the sorted moments in w.
func within(sorted []time.Duration, w window) []time.Duration {
	var out []time.Duration
	for _, at := range sorted {
		if w.contains(at) {
			out = append(out, at)
		}
	}
	return out
}

// tournamentFrame is the part of a tournament room's frame loadtest reads.
type tournamentFrame struct {
	Type  string           `json:"type"`
	Event domain.EventName `json:"event"`
	Seq   int              `json:"seq"`
	Code  string           `json:"code"`
	Data  json.RawMessage  `json:"data"`
}

type pairingData struct {
	GameID  string `json:"gameId"`
	Players []struct {
		UserID string `json:"userId"`
	} `json:"players"`
}

type tournamentAnswer struct {
	ID       string    `json:"id"`
	StartsAt time.Time `json:"startsAt"`
	EndsAt   time.Time `json:"endsAt"`
}

// arenaEngine plays the arena's games as the pairings arrive.
type arenaEngine struct {
	r       *runner
	id      string // the tournament
	meter   *arenaMeter
	players map[string]*apiclient.Client
	games   sync.WaitGroup

	mu        sync.Mutex
	moves     []time.Duration // move POST latencies
	berserks  []time.Duration // berserk POST latencies
	completed int
}

// berserk has c go berserk in its new game (before its first move), with
// the run's -berserk probability.
func (e *arenaEngine) berserk(ctx context.Context, c *apiclient.Client) {
	if rand.Float64() >= e.r.cfg.Berserk {
		return
	}
	start := now()
	if err := c.Do(ctx, http.MethodPost, "/tournaments/"+e.id+"/berserk", nil, nil); err != nil {
		if ctx.Err() == nil {
			e.r.errs.Add("berserk: " + errorKind(err))
		}
		return
	}
	e.mu.Lock()
	e.berserks = append(e.berserks, now()-start)
	e.mu.Unlock()
}

// play plays one paired game: both players think and choose at random
// each round until a move's answer says the game is over, which is its
// end for the meter. A game that ended otherwise (a refused move says it
// is no longer active) has no end the run saw.
func (e *arenaEngine) play(ctx context.Context, gameID string, users []string) {
	defer e.games.Done()
	var clients []*apiclient.Client
	for _, u := range users {
		if c := e.players[u]; c != nil {
			clients = append(clients, c)
		}
	}
	if len(clients) != 2 {
		e.r.errs.Add("pairing of players not in the run")
		return
	}
	think := func() bool {
		base := float64(e.r.cfg.Think)
		return domain.Sleep(ctx, time.Duration(base*(1+e.r.cfg.Jitter*(2*rand.Float64()-1))))
	}
	for _, c := range clients {
		e.berserk(ctx, c)
	}
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		var over, gone atomic.Bool
		var endedAt atomic.Int64
		for _, c := range clients {
			wg.Go(func() {
				if !think() {
					return
				}
				rec, ans, outcome := e.r.randomMove(ctx, c, gameID)
				switch outcome {
				case moveAnswered:
					e.mu.Lock()
					e.moves = append(e.moves, rec.end-rec.start)
					e.mu.Unlock()
					if ans.Status != "active" {
						endedAt.Store(int64(rec.end))
						over.Store(true)
					}
				case moveGameOver:
					gone.Store(true)
				}
			})
		}
		wg.Wait()
		if over.Load() {
			e.meter.gameEnded(users, time.Duration(endedAt.Load()))
			e.mu.Lock()
			e.completed++
			e.mu.Unlock()
			return
		}
		if gone.Load() {
			return
		}
	}
}

// watch reads the tournament room on conn until ctx is done or the
// tournament finishes: pairings start games, standings frames are
// counted, a resync-tournament rejoins with the last seq.
func (e *arenaEngine) watch(ctx context.Context, conn *websocket.Conn, id string, finished chan<- struct{}, resyncs *atomic.Int64) {
	lastSeq := 0
	for {
		_, raw, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() == nil {
				e.r.errs.Add("tournament socket: " + errorKind(err))
			}
			return
		}
		at := now()
		var f tournamentFrame
		if err := json.Unmarshal(raw, &f); err != nil {
			e.r.errs.Add("tournament frame: not JSON")
			continue
		}
		switch f.Type {
		case "joined-tournament", "resumed-tournament":
			lastSeq = max(lastSeq, f.Seq)
		case "resync-tournament":
			resyncs.Add(1)
			if err := conn.WriteJSON(map[string]any{"type": "join-tournament", "tournamentId": id, "lastSeq": lastSeq}); err != nil {
				e.r.errs.Add("tournament socket: " + errorKind(err))
				return
			}
		case "error":
			e.r.errs.Add("tournament socket error: " + f.Code)
		case "event":
			if f.Seq <= lastSeq {
				continue
			}
			lastSeq = f.Seq
			switch f.Event {
			case domain.EventTournamentStandings:
				e.meter.standingsFrame(at)
			case domain.EventTournamentPairing:
				var p pairingData
				if err := json.Unmarshal(f.Data, &p); err != nil {
					e.r.errs.Add(string(domain.EventTournamentPairing) + ": not its shape")
					continue
				}
				users := make([]string, len(p.Players))
				for i, pl := range p.Players {
					users[i] = pl.UserID
				}
				e.meter.paired(users, at)
				e.games.Add(1)
				go e.play(ctx, p.GameID, users)
			case domain.EventTournamentFinished, domain.EventTournamentCancelled:
				close(finished)
				return
			}
		}
	}
}

// arena runs the arena scenario: one free arena of -players players that
// starts -arena-lead after it is created and lasts -duration (whole
// minutes), watched by one socket in its room. Each pairing frame starts
// the pair's game, played with -think between moves.
func (r *runner) arena(ctx context.Context) error {
	cfg := r.cfg
	minutes := int(cfg.Duration.Round(time.Minute) / time.Minute)
	res := &ArenaResult{Players: cfg.Players, DurationMinutes: minutes, ThinkMs: ms(cfg.Think)}
	r.report.Arena = res

	clients, err := r.signIn(ctx, cfg.Players+1)
	if err != nil {
		return setupError("signing in", err)
	}
	owner, players := clients[0], clients[1:]
	var t tournamentAnswer
	if err := owner.Do(ctx, http.MethodPost, "/tournaments", map[string]any{"name": "Load arena", "gameType": "rps",
		"settings": rpsSettings{Rounds: cfg.Rounds, RoundSeconds: cfg.RoundSeconds}, "entryFeeMinor": 0,
		"startsAt": time.Now().Add(cfg.ArenaLead).UTC().Format(time.RFC3339), "durationMinutes": minutes,
		"maxPlayers": cfg.Players}, &t); err != nil {
		return setupError("creating the arena (the server's TOURNAMENT_MAX_PLAYERS must allow -players)", err)
	}
	r.progress("arena %s starts at %s", t.ID, t.StartsAt.Format(time.TimeOnly))
	e := &arenaEngine{r: r, id: t.ID, players: map[string]*apiclient.Client{}}
	for _, p := range players {
		e.players[p.UserID] = p
	}
	if err := forEach(ctx, len(players), cfg.SetupConcurrency, func(ctx context.Context, i int) error {
		return players[i].Do(ctx, http.MethodPost, "/tournaments/"+t.ID+"/join", nil, nil)
	}); err != nil {
		return setupError("joining the arena", err)
	}
	if time.Now().After(t.StartsAt) {
		return setupError("joining the arena", fmt.Errorf("the players joined after the start: raise -arena-lead"))
	}
	r.progress("%d players joined", len(players))
	sockets, err := r.roomSockets(ctx, players, t.ID)
	defer func() {
		for _, c := range sockets {
			if c != nil {
				c.Close()
			}
		}
	}()
	if err != nil {
		return setupError("connecting the players' sockets to the arena's room", err)
	}
	r.progress("%d players connected to the arena's room", len(players))

	spec := newSpectator(r, owner)
	conn, err := spec.dial(ctx)
	if err != nil {
		return setupError("connecting the tournament socket", err)
	}
	defer conn.Close()
	if err := conn.WriteJSON(map[string]any{"type": "join-tournament", "tournamentId": t.ID}); err != nil {
		return setupError("joining the tournament room", err)
	}
	startAt := now() + time.Until(t.StartsAt)
	endAt := now() + time.Until(t.EndsAt)
	e.meter = newArenaMeter(startAt)
	var meter *cpuMeter
	if cfg.CPU {
		if meter, err = newCPUMeter(cfg.URL, cfg.ServerPID, true, cfg.PgDatabase); err != nil {
			r.progress("not measuring CPU: %v", err)
		}
	}
	finished := make(chan struct{})
	var resyncs atomic.Int64
	play, stop := context.WithCancel(ctx)
	defer stop()
	go e.watch(play, conn, t.ID, finished, &resyncs)

	domain.Sleep(ctx, startAt-now())
	first := meter.sample()
	r.progress("the arena runs until %s", t.EndsAt.Format(time.TimeOnly))
	domain.Sleep(ctx, endAt-now())
	last := meter.sample()
	r.progress("the arena's time is up: waiting for its last games and its end")
	select {
	case <-finished:
		res.Finished = true
	case <-ctx.Done():
	case <-time.After(time.Duration(cfg.Rounds*2*cfg.RoundSeconds)*time.Second + cfg.Drain):
		r.errs.Add("the arena did not finish")
	}
	stop()
	conn.Close()
	e.games.Wait()

	e.summarize(res, window{From: startAt, To: endAt}, int(resyncs.Load()))
	if meter != nil {
		res.CPU = cpuUse(first, last, res.Moves, res.GamesCompleted)
	}
	return nil
}

// roomSockets opens each player's socket in the arena's room, as its page
// holds one: the arena pairs only entrants connected to it. Their frames
// are read and dropped (the run's own spectator socket measures the
// room). The sockets opened are returned even with an error, to be closed.
func (r *runner) roomSockets(ctx context.Context, players []*apiclient.Client, id string) ([]*websocket.Conn, error) {
	sockets := make([]*websocket.Conn, len(players))
	err := forEach(ctx, len(players), r.cfg.SetupConcurrency, func(ctx context.Context, i int) error {
		c, err := newSpectator(r, players[i]).dial(ctx)
		if err != nil {
			return err
		}
		sockets[i] = c
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		return c.WriteJSON(map[string]any{"type": "join-tournament", "tournamentId": id})
	})
	return sockets, err
}

// summarize fills res with what the run saw while the arena ran (run):
// pairings, standings frames, moves and berserks.
func (e *arenaEngine) summarize(res *ArenaResult, run window, resyncs int) {
	res.RunningSeconds = (run.To - run.From).Seconds()
	m := e.meter
	m.mu.Lock()
	pairings, standings := slices.Clone(m.pairings), slices.Clone(m.standings)
	res.FirstPairing, res.EndToPairing = Summarize(m.first), Summarize(m.waits)
	m.mu.Unlock()
	res.Unpaired = m.unpaired(run.To - 2*time.Second)
	slices.Sort(pairings)
	slices.Sort(standings)
	running := within(pairings, run)
	res.Pairings, res.PairingsPerSec, res.PeakPairings = len(running), float64(len(running))/res.RunningSeconds, maxInWindow(running, time.Second)
	inRun := within(standings, run)
	res.StandingsFrames, res.StandingsPerSec = len(inRun), float64(len(inRun))/res.RunningSeconds
	res.StandingsPeak, res.StandingsMinGapM = maxInWindow(standings, time.Second), ms(minGap(standings))
	res.StandingsPeak10 = maxInWindow(standings, 10*time.Second)
	res.Resyncs = resyncs
	e.mu.Lock()
	res.Moves, res.MovePOST, res.GamesCompleted = len(e.moves), Summarize(e.moves), e.completed
	res.Berserks, res.BerserkPOST = len(e.berserks), Summarize(e.berserks)
	e.mu.Unlock()
}

func arenaTable(rep *Report) Table {
	a := rep.Arena
	rows := append(interruptedRow(rep), signInRows(rep.SignIn)...)
	rows = append(rows,
		[]string{"arena"},
		[]string{"  players, length", fmt.Sprintf("%d, %d min (think %s)", a.Players, a.DurationMinutes, fmtMs(a.ThinkMs))},
		[]string{"  finished", fmt.Sprintf("%v", a.Finished)},
		[]string{"pairing"},
		[]string{"  start to first pairing p50/p90/p99/max", fmtLatency(a.FirstPairing)},
		[]string{"  game end to next pairing p50/p90/p99/max", fmtLatency(a.EndToPairing)},
		[]string{"  ends not followed by a pairing", fmt.Sprintf("%d", a.Unpaired)},
		[]string{"  pairings while running", fmt.Sprintf("%d (%s, peak %d in a second)", a.Pairings, fmtRate(a.PairingsPerSec), a.PeakPairings)},
		[]string{"games"},
		[]string{"  completed", fmt.Sprintf("%d", a.GamesCompleted)},
		[]string{"  moves, POST p50/p90/p99/max", fmt.Sprintf("%d, %s", a.Moves, fmtLatency(a.MovePOST))},
		[]string{"  berserks, POST p50/p90/p99/max", fmt.Sprintf("%d, %s", a.Berserks, fmtLatency(a.BerserkPOST))},
		[]string{"tournament room (one socket)"},
		[]string{"  standings frames", fmt.Sprintf("%d (%s, at most %d in a second and %d in ten, shortest gap %s)", a.StandingsFrames,
			fmtRate(a.StandingsPerSec), a.StandingsPeak, a.StandingsPeak10, fmtMs(a.StandingsMinGapM))},
		[]string{"  resyncs", fmt.Sprintf("%d", a.Resyncs)},
	)
	if c := a.CPU; c != nil {
		rows = append(rows, []string{"CPU (server + PostgreSQL) while running"},
			[]string{"  in the span", fmt.Sprintf("%.2f s + %.2f s", c.ServerSeconds, c.PostgresSeconds)},
			[]string{"  per game", fmt.Sprintf("%.1f ms (server %.1f, PostgreSQL %.1f; %d games)", c.PerGameMs, c.ServerPerGameMs, c.PgPerGameMs, c.Games)})
	}
	rows = append(rows, errorRows(rep.Errors)...)
	return Table{Header: metricHeader, Rows: rows, LeftAll: true}
}
