package handlers_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game/rules"
	"wager/web/live"
)

// queryCounter counts the statements bun sends but for the background
// ones (the hub's presence and its check for missed events, the
// announcements to other instances: see background) and those of the
// benchmark's own transactions (their context is marked with actionKey).
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (q *queryCounter) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if !background(e.Query) && ctx.Value(actionKey{}) == nil {
		q.n.Add(1)
	}
}

// BenchmarkEventTo1000PagesAnd1000APISockets measures one game event
// reaching the 1,000 browser pages and 1,000 API sockets of one room on
// one instance: the database queries made for it after its commit
// (queries/event: none, the room renders from memory; the announcement to
// other instances, one NOTIFY per batch of commits, is not counted) and
// the time from the start of the transaction that appends it to the last
// delivery (µs-to-last/event), of which the transaction alone takes
// µs-append/event.
func BenchmarkEventTo1000PagesAnd1000APISockets(b *testing.B) {
	a := newTestApp(b, noWorkers) // the deadline worker's statements are not the event's
	p1, _, gameID := a.match(b, `{"rounds": 9, "roundSeconds": 120}`)
	viewer := a.newPlayer(b)
	ctx := context.Background()
	m, err := a.Games.Metadata(ctx, gameID)
	if err != nil {
		b.Fatal(err)
	}
	var conns []*live.Conn
	for i := 0; i < 1000; i++ {
		for _, aud := range []live.Audience{live.HTML, live.JSON} {
			c := live.NewConn(viewer.id, aud)
			if err := a.Live.Join(ctx, c, domain.GameStreamOf(gameID), m.LastSeq, m.LastSeq, false, 0); err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
	}
	appendOne := func(gameID string) { a.appendSubmitted(b, gameID, p1.id) }
	counter := &queryCounter{}
	db.AddQueryHook(a.DB, counter)
	_, _, quiet := a.match(b, `{"rounds": 9, "roundSeconds": 120}`) // a game nobody watches
	time.Sleep(time.Second)                                         // the spectator count goes out
	drainFrames(conns)

	var elapsed, appending time.Duration
	var queries int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		appendOne(quiet) // the same transaction where nobody watches
		appending += time.Since(start)
		before := counter.n.Load()
		start = time.Now()
		appendOne(gameID)
		for _, c := range conns {
			select {
			case <-c.Frames():
			case <-time.After(10 * time.Second):
				b.Fatal("a socket did not get the event")
			}
		}
		elapsed += time.Since(start)
		queries += counter.n.Load() - before
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/event")
	b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "µs-to-last/event")
	b.ReportMetric(float64(appending.Microseconds())/float64(b.N), "µs-append/event")
}

// appendSubmitted appends a game event (a player's hidden choice) to a
// game's room in a transaction of its own, as a move would; its context
// is marked with actionKey.
func (a *testApp) appendSubmitted(b *testing.B, gameID, userID string) {
	ctx := context.WithValue(context.Background(), actionKey{}, true)
	err := db.Transact(ctx, a.DB, func(ctx context.Context, tx db.Tx) error {
		_, err := a.Events.Append(ctx, tx, domain.GameStreamOf(gameID), time.Now(), domain.Event{Name: "game:rps:round:submitted",
			Data: rules.RPSSubmitted{Round: 1, UserID: userID, Commitment: strings.Repeat("c", 64)}})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

func drainFrames(conns []*live.Conn) {
	for _, c := range conns {
		for len(c.Frames()) > 0 {
			<-c.Frames()
		}
	}
}

// BenchmarkDeliveryWhileAnotherUserFloods measures how long one game event
// takes to reach a watcher's socket, from the start of the transaction that
// appends it to the frame's arrival (p50-µs, p99-µs), while nobody else
// uses the server (quiet) and while another user floods it from all the
// sockets it may hold, joining and leaving the game as fast as the server
// answers and reconnecting whenever the server closes a socket for it
// (flood).
func BenchmarkDeliveryWhileAnotherUserFloods(b *testing.B) {
	for _, flooding := range []bool{false, true} {
		name := "quiet"
		if flooding {
			name = "flood"
		}
		b.Run(name, func(b *testing.B) {
			a := newTestApp(b, nil)
			srv := httptest.NewServer(a.Handler())
			b.Cleanup(srv.Close)
			p1, _, gameID := a.match(b, `{"rounds": 9, "roundSeconds": 120}`)
			watcher := dialWS(b, srv, tokenOf(a.newPlayer(b)))
			watcher.send(map[string]any{"type": "join-game", "gameId": gameID})
			watcher.next("joined")

			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var answered, closed atomic.Int64
			if flooding {
				url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?token=" + tokenOf(a.newPlayer(b))
				for range live.MaxSocketsPerUser {
					wg.Go(func() { flood(ctx, url, gameID, &answered, &closed) })
				}
			}
			b.Cleanup(func() { stop(); wg.Wait() })
			time.Sleep(500 * time.Millisecond)

			latencies := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				a.appendSubmitted(b, gameID, p1.id)
				watcher.next("event")
				latencies = append(latencies, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(latencies)
			b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
			if flooding {
				b.ReportMetric(float64(answered.Load())/b.Elapsed().Seconds(), "flood-answers/s")
				b.ReportMetric(float64(closed.Load())/b.Elapsed().Seconds(), "flood-closes/s")
			}
		})
	}
}

// flood joins and leaves a game on one socket as fast as the server
// answers, dialling again whenever the server closes the socket, until ctx
// is done. (Waiting for each answer keeps the flooder, which shares the
// machine, from spending its CPU on writes the server never reads.)
func flood(ctx context.Context, url, gameID string, answered, closed *atomic.Int64) {
	join := []byte(`{"type":"join-game","gameId":"` + gameID + `"}`)
	leave := []byte(`{"type":"leave-game","gameId":"` + gameID + `"}`)
	for ctx.Err() == nil {
		c, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the closed socket's place is not free yet
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		for i := 0; ; i++ {
			msg, want := join, `"type":"joined"`
			if i%2 == 1 {
				msg, want = leave, `"type":"left"`
			}
			if c.WriteMessage(websocket.TextMessage, msg) != nil {
				break
			}
			if !awaitFrame(c, want) {
				break
			}
			answered.Add(1)
		}
		closed.Add(1)
		stop()
		c.Close()
	}
}

// awaitFrame reads frames until one containing want, and reports false
// when the socket closes first.
func awaitFrame(c *websocket.Conn, want string) bool {
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			return false
		}
		if strings.Contains(string(data), want) {
			return true
		}
	}
}
