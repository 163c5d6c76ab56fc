package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/web"
)

// BenchmarkRenderAndFanOutToPages measures one game event reaching 1,000
// browser pages: the hub reads the new event row, renders the HTML
// fragments once, and queues the same bytes for every page.
func BenchmarkRenderAndFanOutToPages(b *testing.B) {
	const pages = 1000
	a := newTestApp(b, nil)
	_, _, gameID := a.match(b, `{"rounds": 9, "roundSeconds": 120}`)
	viewer := a.newPlayer(b)
	subs := make([]*web.Subscriber, pages)
	for i := range subs {
		subs[i] = web.NewSubscriber(viewer.id, web.AudienceHTML)
		a.Hub.Join(subs[i], gameID, 1<<30, false, nil) // nothing to replay
	}
	// Wait until every page is in the room (each join answers nothing,
	// so join a last one with a JSON probe and wait for its frame).
	probe := web.NewSubscriber(viewer.id, web.AudienceJSON)
	a.Hub.Join(probe, gameID, 1<<30, false, []byte("joined"))
	<-probe.Send
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		err := a.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return game.AppendEvents(ctx, tx, gameID, time.Now(), rules.Event{Name: "game:spectators", Data: map[string]int{"count": i}})
		})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		a.Hub.GameChanged(gameID)
		for _, s := range subs {
			select {
			case <-s.Send:
			case <-time.After(5 * time.Second):
				b.Fatal("a page did not get the event")
			}
		}
	}
}
