package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Report is everything a run measured; -json writes it.
type Report struct {
	Scenario    string        `json:"scenario"`
	URL         string        `json:"url"`
	StartedAt   time.Time     `json:"startedAt"`
	Seconds     float64       `json:"seconds" doc:"whole run, setup included"`
	FileLimit   uint64        `json:"fileLimit" doc:"loadtest's open-files limit"`
	SignIn      SignInResult  `json:"signIn"`
	Fanout      *FanoutResult `json:"fanout,omitempty"`
	Play        *PlayResult   `json:"play,omitempty"`
	Reads       *ReadsResult  `json:"reads,omitempty"`
	Arena       *ArenaResult  `json:"arena,omitempty"`
	Faults      *FaultsResult `json:"rpcFaults,omitempty"`
	Errors      []ErrorCount  `json:"errors" doc:"every error of the run by kind"`
	Interrupted bool          `json:"interrupted" doc:"the run was cut short by SIGINT"`
}

// FanoutResult is the fanout scenario: many sockets watching few games.
type FanoutResult struct {
	Games          int        `json:"games"`
	Sockets        int        `json:"sockets"`
	SpectatorUsers int        `json:"spectatorUsers"`
	MovesPerGame   int        `json:"movesPerGame"`
	ThinkMs        float64    `json:"thinkMs"`
	GameStart      Latency    `json:"gameStart" doc:"creating the lobby to the second join answering matched"`
	Joined         int        `json:"joined" doc:"sockets whose join-game was answered with joined"`
	ConnectSeconds float64    `json:"connectSeconds" doc:"from the first dial to the last joined frame"`
	SocketsPerSec  float64    `json:"socketsPerSecond"`
	ConnectJoin    Latency    `json:"connectJoin" doc:"per socket: dial to its joined frame"`
	Memory         *PerSocket `json:"memory,omitempty" doc:"server metrics before and after the sockets joined (-metrics)"`
	Moves          int        `json:"moves" doc:"accepted actions, the final resign included"`
	MovesPerSec    float64    `json:"movesPerSecond"`
	MovePOST       Latency    `json:"movePost"`
	Delivery       Delivery   `json:"delivery"`
}

// PlayResult is the play scenario: bots playing many games, watched.
type PlayResult struct {
	Games             int      `json:"games" doc:"concurrent games (tables)"`
	SpectatorsPerGame int      `json:"spectatorsPerGame"`
	Sockets           int      `json:"sockets"`
	ThinkMs           float64  `json:"thinkMs" doc:"think time between a player's moves (at the start of a ramp)"`
	DurationSeconds   float64  `json:"durationSeconds" doc:"measured span"`
	GamesStarted      int      `json:"gamesStarted"`
	GamesCompleted    int      `json:"gamesCompleted"`
	Moves             int      `json:"moves"`
	MovesPerSec       float64  `json:"movesPerSecond"`
	MovePOST          Latency  `json:"movePost"`
	GameStart         Latency  `json:"gameStart" doc:"creating the lobby to the second join answering matched"`
	Delivery          Delivery `json:"delivery"`
	Ramp              *Ramp    `json:"ramp,omitempty"`
	CPU               *CPUUse  `json:"cpu,omitempty" doc:"CPU of the server and local PostgreSQL in the measured span (-cpu, not with -find-max)"`
}

// Ramp is a -find-max run: the move rate raised step by step.
type Ramp struct {
	P99LimitMs         float64    `json:"p99LimitMs"`
	StepSeconds        float64    `json:"stepSeconds"`
	Steps              []RampStep `json:"steps"`
	MaxSustainableRate float64    `json:"maxSustainableMovesPerSecond" doc:"moves/s of the last step within the limit without errors; 0 if none"`
	LimitReached       bool       `json:"limitReached" doc:"false: every step passed, the maximum is higher"`
}

// RampStep is one step of a ramp.
type RampStep struct {
	ThinkMs     float64      `json:"thinkMs"`
	MovesPerSec float64      `json:"movesPerSecond"`
	MovePOST    Latency      `json:"movePost"`
	Delivery    Latency      `json:"delivery"`
	Errors      []ErrorCount `json:"errors"`
	Passed      bool         `json:"passed"`
}

// ReadsResult is the reads scenario: public read endpoints against the
// bare reference.
type ReadsResult struct {
	LiveGames       int              `json:"liveGames"`
	Concurrency     int              `json:"concurrency"`
	DurationSeconds float64          `json:"durationSeconds" doc:"per endpoint"`
	Endpoints       []EndpointResult `json:"endpoints"`
}

// EndpointResult is one endpoint of one server under the reads load.
type EndpointResult struct {
	Endpoint   string       `json:"endpoint"`
	Server     string       `json:"server" doc:"project or bare"`
	Requests   int          `json:"requests" doc:"successful answers"`
	PerSecond  float64      `json:"requestsPerSecond"`
	Latency    Latency      `json:"latency"`
	Errors     []ErrorCount `json:"errors"`
	RateVsBare *float64     `json:"rateVsBare,omitempty" doc:"requests/s divided by the bare server's"`
	P99VsBare  *float64     `json:"p99VsBare,omitempty" doc:"p99 divided by the bare server's"`
	// CPU per request: steadier than the rate on a few shared cores.
	CPUPerRequestUs float64  `json:"cpuPerRequestUs,omitempty" doc:"CPU of the server (the project's: and of PostgreSQL, when local) per successful answer; 0 when not measured"`
	CPUVsBare       *float64 `json:"cpuVsBare,omitempty" doc:"CPU per request divided by the bare server's"`
	ErrorsTotal     int      `json:"errorsTotal"`
}

// writeJSON writes the report to path.
func writeJSON(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// Table is a grid of text for the terminal. A row with a single cell is a
// section heading.
type Table struct {
	Header []string
	Rows   [][]string
	// LeftAll aligns every column left; otherwise columns after the first
	// are aligned right, for numbers.
	LeftAll bool
}

// Write prints the table with aligned columns two spaces apart, a rule
// under the header.
func (t Table) Write(w io.Writer) error {
	widths := make([]int, len(t.Header))
	measure := func(row []string) {
		if len(row) < 2 {
			return
		}
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	measure(t.Header)
	for _, r := range t.Rows {
		measure(r)
	}
	var b strings.Builder
	line := func(row []string) {
		if len(row) == 1 {
			b.WriteString(row[0])
			b.WriteByte('\n')
			return
		}
		var s strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				s.WriteString(c + pad)
			case t.LeftAll:
				s.WriteString("  " + c + pad)
			default:
				s.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(s.String(), " "))
		b.WriteByte('\n')
	}
	line(t.Header)
	total := 0
	for _, wd := range widths {
		total += wd
	}
	b.WriteString(strings.Repeat("-", total+2*(len(widths)-1)))
	b.WriteByte('\n')
	for _, r := range t.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtMs prints milliseconds with a precision that suits their size.
func fmtMs(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// fmtLatency prints p50 / p90 / p99 / max and the sample count.
func fmtLatency(l Latency) string {
	if l.Count == 0 {
		return "no samples"
	}
	return fmt.Sprintf("%s / %s / %s / %s  (n=%d)", fmtMs(l.P50Ms), fmtMs(l.P90Ms), fmtMs(l.P99Ms), fmtMs(l.MaxMs), l.Count)
}

func fmtRate(v float64) string { return fmt.Sprintf("%.1f/s", v) }

func fmtBytes(v float64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%s%.2f MiB", sign, v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%s%.1f KiB", sign, v/(1<<10))
	}
	return fmt.Sprintf("%s%.0f B", sign, v)
}

func fmtRatio(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", *p)
}

// fmtErrors prints error counts as "n (kind n, kind n)".
func fmtErrors(cs []ErrorCount) string {
	n := totalErrors(cs)
	if n == 0 {
		return "0"
	}
	parts := make([]string, 0, len(cs))
	for i, c := range cs {
		if i == 3 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %d", c.Kind, c.Count))
	}
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
}

var metricHeader = []string{"metric", "value"}

// interruptedRow says that SIGINT cut the run short, or nothing.
func interruptedRow(rep *Report) [][]string {
	if !rep.Interrupted {
		return nil
	}
	return [][]string{{"interrupted: the figures cover the run until SIGINT"}}
}

func signInRows(s SignInResult) [][]string {
	return [][]string{
		{"sign-in"},
		{"  wallets signed in", fmt.Sprint(s.Wallets)},
		{"  sign-in rate", fmtRate(s.WalletsPerSec)},
		{"  handshake+login p50/p90/p99/max", fmtLatency(s.HandshakeLogin)},
	}
}

func deliveryRows(d Delivery) [][]string {
	rows := [][]string{
		{"  delivery latency p50/p90/p99/max", fmtLatency(d.Latency)},
		{"  delivered", fmt.Sprintf("%.2f %% (%d of %d)", d.DeliveredPct, d.Received, d.Expected)},
		{"  resync frames / reconnects", fmt.Sprintf("%d / %d", d.Resyncs, d.Reconnects)},
		{"  join-game to joined p50/p90/p99/max", fmtLatency(d.JoinLatency)},
		{"  joins refused / unanswered", fmt.Sprintf("%d / %d", d.Refused, d.Unanswered)},
		{"  events without a known cause", fmt.Sprint(d.Unattributed)},
	}
	if s, ok := slowest(d.BySecond); ok {
		rows = slices.Insert(rows, 1, []string{"  slowest second's p50/p90/p99/max",
			fmt.Sprintf("%s  (second %d of %d)", fmtLatency(s.Latency), s.Second+1, len(d.BySecond))})
	}
	return rows
}

func errorRows(cs []ErrorCount) [][]string {
	rows := [][]string{{"errors"}, {"  total", fmt.Sprint(totalErrors(cs))}}
	for _, c := range cs {
		rows = append(rows, []string{"  " + c.Kind, fmt.Sprint(c.Count)})
	}
	return rows
}

// fanoutTable lays out a fanout report.
func fanoutTable(rep *Report) Table {
	f := rep.Fanout
	rows := append(interruptedRow(rep), signInRows(rep.SignIn)...)
	rows = append(rows,
		[]string{"setup"},
		[]string{"  games", fmt.Sprint(f.Games)},
		[]string{"  game start p50/p90/p99/max", fmtLatency(f.GameStart)},
		[]string{"sockets"},
		[]string{"  sockets joined", fmt.Sprintf("%d of %d (%d spectator users)", f.Joined, f.Sockets, f.SpectatorUsers)},
		[]string{"  time to connect and join all", fmt.Sprintf("%.2f s (%s)", f.ConnectSeconds, fmtRate(f.SocketsPerSec))},
		[]string{"  connect+join per socket p50/p90/p99/max", fmtLatency(f.ConnectJoin)},
	)
	if m := f.Memory; m != nil {
		rows = append(rows,
			[]string{"  server RSS per socket", fmtBytes(m.ResidentBytesPerSocket)},
			[]string{"  server heap in use per socket", fmtBytes(m.HeapInuseBytesPerSock)},
			[]string{"  server goroutines per socket", fmt.Sprintf("%.2f", m.GoroutinesPerSocket)},
		)
	}
	rows = append(rows,
		[]string{"moves"},
		[]string{"  moves and resigns accepted", fmt.Sprintf("%d (%d moves per game, think %s)", f.Moves, f.MovesPerGame, fmtMs(f.ThinkMs))},
		[]string{"  move rate", fmtRate(f.MovesPerSec)},
		[]string{"  move POST p50/p90/p99/max", fmtLatency(f.MovePOST)},
		[]string{"spectators"},
	)
	rows = append(rows, deliveryRows(f.Delivery)...)
	rows = append(rows, errorRows(rep.Errors)...)
	return Table{Header: metricHeader, Rows: rows, LeftAll: true}
}

// playTable lays out a play report.
func playTable(rep *Report) Table {
	p := rep.Play
	rows := append(interruptedRow(rep), signInRows(rep.SignIn)...)
	rows = append(rows,
		[]string{"games"},
		[]string{"  concurrent games", fmt.Sprintf("%d (%d spectator sockets)", p.Games, p.Sockets)},
		[]string{"  games started / completed", fmt.Sprintf("%d / %d", p.GamesStarted, p.GamesCompleted)},
		[]string{"  game start p50/p90/p99/max", fmtLatency(p.GameStart)},
		[]string{"moves"},
		[]string{"  moves accepted", fmt.Sprintf("%d in %.1f s (think %s)", p.Moves, p.DurationSeconds, fmtMs(p.ThinkMs))},
		[]string{"  move rate", fmtRate(p.MovesPerSec)},
		[]string{"  move POST p50/p90/p99/max", fmtLatency(p.MovePOST)},
		[]string{"spectators"},
	)
	rows = append(rows, deliveryRows(p.Delivery)...)
	if c := p.CPU; c != nil {
		rows = append(rows, []string{"CPU (server + PostgreSQL)"},
			[]string{"  in the span", fmt.Sprintf("%.2f s + %.2f s", c.ServerSeconds, c.PostgresSeconds)},
			[]string{"  per move", fmt.Sprintf("%.2f ms (%d moves)", c.PerMoveMs, c.Moves)},
			[]string{"  per game", fmt.Sprintf("%.1f ms (server %.1f, PostgreSQL %.1f; %d games)", c.PerGameMs, c.ServerPerGameMs, c.PgPerGameMs, c.Games)})
	}
	if r := p.Ramp; r != nil {
		rows = append(rows, []string{fmt.Sprintf("ramp (steps of %.0f s, delivery p99 limit %s)", r.StepSeconds, fmtMs(r.P99LimitMs))})
		for i, s := range r.Steps {
			verdict := "over"
			if s.Passed {
				verdict = "ok"
			}
			rows = append(rows, []string{
				fmt.Sprintf("  step %d: think %s", i+1, fmtMs(s.ThinkMs)),
				fmt.Sprintf("%s, delivery p99 %s, errors %d: %s", fmtRate(s.MovesPerSec), fmtMs(s.Delivery.P99Ms), totalErrors(s.Errors), verdict),
			})
		}
		best := fmtRate(r.MaxSustainableRate)
		if !r.LimitReached {
			best = fmt.Sprintf("at least %s (no step went over the limit)", best)
		}
		rows = append(rows, []string{"  highest sustainable move rate", best})
	}
	rows = append(rows, errorRows(rep.Errors)...)
	return Table{Header: metricHeader, Rows: rows, LeftAll: true}
}

// readsTable lays out a reads report: one row per endpoint and server.
func readsTable(rep *Report) Table {
	r := rep.Reads
	t := Table{Header: []string{"endpoint", "server", "req/s", "p50", "p99", "errors", "CPU/req", "req/s vs bare", "p99 vs bare",
		"CPU vs bare"}}
	for _, e := range r.Endpoints {
		cpu := "-"
		if e.CPUPerRequestUs > 0 {
			cpu = fmt.Sprintf("%.1f µs", e.CPUPerRequestUs)
		}
		t.Rows = append(t.Rows, []string{e.Endpoint, e.Server, fmt.Sprintf("%.0f", e.PerSecond), fmtMs(e.Latency.P50Ms),
			fmtMs(e.Latency.P99Ms), fmt.Sprint(e.ErrorsTotal), cpu, fmtRatio(e.RateVsBare), fmtRatio(e.P99VsBare), fmtRatio(e.CPUVsBare)})
	}
	t.Rows = append(t.Rows, []string{fmt.Sprintf("%d live games, %d connections, %.0f s per endpoint; sign-in %d wallets at %s",
		r.LiveGames, r.Concurrency, r.DurationSeconds, rep.SignIn.Wallets, fmtRate(rep.SignIn.WalletsPerSec))})
	for _, c := range rep.Errors {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("error %s: %d", c.Kind, c.Count)})
	}
	t.Rows = append(t.Rows, interruptedRow(rep)...)
	return t
}
