package handlers_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game/rules"
	"wager/web/live"
)

// queryCounter counts the statements bun sends, but for the hub's
// periodic ones (spectator presence every second, the check for missed
// events every two), which do not depend on events.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (q *queryCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if !strings.Contains(e.Query, "instance_presence") && !strings.HasPrefix(e.Query, `SELECT "id", "seq" FROM "games"`) {
		q.n.Add(1)
	}
}

// BenchmarkEventTo1000PagesAnd1000APISockets measures one game event
// reaching the 1,000 browser pages and 1,000 API sockets of one room on
// one instance: the database queries made for it after its commit
// (queries/event: the pages' rendering reads the game and its pot, and the
// announcement to other instances is one NOTIFY per batch of commits;
// none of it grows with the viewers) and the time from
// the start of the transaction that appends it to the last delivery
// (µs-to-last/event), of which the transaction alone takes
// µs-append/event.
func BenchmarkEventTo1000PagesAnd1000APISockets(b *testing.B) {
	a := newTestApp(b, nil)
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
			if err := a.Live.Join(ctx, c, gameID, m.LastSeq, m.LastSeq, false); err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
	}
	appendOne := func(gameID string) {
		err := db.Transact(ctx, a.DB, func(ctx context.Context, tx bun.Tx) error {
			_, err := a.Rooms.Append(ctx, tx, gameID, time.Now(), domain.Event{Name: "game:rps:round:submitted",
				Data: rules.RPSSubmitted{Round: 1, UserID: p1.id, Commitment: strings.Repeat("c", 64)}})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	counter := &queryCounter{}
	//lint:ignore SA1019 the hook must see the running app's own handle, which WithQueryHook would copy
	a.DB.AddQueryHook(counter)
	// The statements of the appending transaction itself, in a game
	// nobody watches.
	_, _, quiet := a.match(b, `{"rounds": 9, "roundSeconds": 120}`)
	before := counter.n.Load()
	appendOne(quiet)
	appendStatements := counter.n.Load() - before
	time.Sleep(time.Second) // the spectator count goes out
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
		queries += counter.n.Load() - before - appendStatements
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/event")
	b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "µs-to-last/event")
	b.ReportMetric(float64(appending.Microseconds())/float64(b.N), "µs-append/event")
}

func drainFrames(conns []*live.Conn) {
	for _, c := range conns {
		for len(c.Frames()) > 0 {
			<-c.Frames()
		}
	}
}
