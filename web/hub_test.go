package web

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"wager/domain/game"
)

func testEvent(seq int) game.Event {
	data, _ := json.Marshal(map[string]any{"round": 2, "choices": map[string]string{"a": "rock", "b": "paper"},
		"winnerId": "b", "scores": map[string]int{"a": 0, "b": 1}})
	return game.Event{GameID: "g1", Seq: seq, Name: "game:rps:round:reveal", Data: data, CreatedAt: time.Now()}
}

func newRoom(n int) (*Hub, *room, []*Subscriber) {
	h := &Hub{renderers: map[Audience]Renderer{AudienceJSON: renderJSON}}
	r := &room{subs: map[*Subscriber]bool{}}
	subs := make([]*Subscriber, n)
	for i := range subs {
		subs[i] = NewSubscriber(fmt.Sprint("user-", i), AudienceJSON)
		subs[i].after["g1"] = 0
		r.subs[subs[i]] = true
	}
	return h, r, subs
}

func TestBroadcastSendsOneRenderingInOrderAndDropsSlowSubscribers(t *testing.T) {
	h, r, subs := newRoom(3)
	slow := subs[2]
	for seq := 1; seq <= sendBuffer+1; seq++ {
		h.broadcast(context.Background(), r, testEvent(seq))
		for _, s := range subs[:2] {
			<-s.Send // the fast ones keep up
		}
	}
	select {
	case <-slow.Done:
	default:
		t.Fatal("a subscriber that fell a whole buffer behind was not dropped")
	}
	if r.subs[slow] {
		t.Error("the dropped subscriber is still in the room")
	}
	if len(r.subs) != 2 {
		t.Errorf("room has %d subscribers, want the 2 fast ones", len(r.subs))
	}
	// Frames already delivered are not sent twice.
	h.broadcast(context.Background(), r, testEvent(sendBuffer+1))
	for _, s := range subs[:2] {
		select {
		case f := <-s.Send:
			t.Fatalf("a repeated event was sent again: %s", f)
		default:
		}
	}
}

// BenchmarkFanOut1000 renders one game event and queues it for 1,000
// subscribers whose writers drain their queues concurrently.
func BenchmarkFanOut1000(b *testing.B) {
	h, r, subs := newRoom(1000)
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-s.Send:
				case <-s.Done:
					return
				}
			}
		}()
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.broadcast(ctx, r, testEvent(i+1))
	}
	b.StopTimer()
	if len(r.subs) != 1000 {
		b.Fatalf("%d subscribers were dropped", 1000-len(r.subs))
	}
	for _, s := range subs {
		s.Close()
	}
	wg.Wait()
}
