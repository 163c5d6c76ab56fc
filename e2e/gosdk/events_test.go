package wager_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
)

// TestPayloadTypesFollowTheAsyncAPIDocument: every event and notice the
// server's AsyncAPI document names decodes in the SDK into the type
// generated from the same schema.
func TestPayloadTypesFollowTheAsyncAPIDocument(t *testing.T) {
	s := startServer(t, nil)
	resp, err := http.Get(s.URL + "/asyncapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Components struct {
			Messages map[string]struct {
				Name    string `json:"name"`
				Payload struct {
					Properties struct {
						Event, Notice struct {
							Const string `json:"const"`
						}
						Data struct {
							Ref string `json:"$ref"`
						}
					} `json:"properties"`
				} `json:"payload"`
			} `json:"messages"`
		} `json:"components"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for id, m := range doc.Components.Messages {
		p := m.Payload.Properties
		var v any
		var err error
		switch {
		case p.Event.Const != "":
			v, err = wager.Event{Name: p.Event.Const, Data: json.RawMessage(`{}`)}.Payload()
		case p.Notice.Const != "":
			v, err = wager.Notice{Kind: p.Notice.Const, Data: json.RawMessage(`{}`)}.Payload()
		default:
			continue
		}
		want := strings.TrimPrefix(p.Data.Ref, "#/components/schemas/")
		if err != nil || reflect.TypeOf(v).Elem().Name() != want {
			t.Errorf("%s: the SDK decodes it into %T (%v), the document says %s", id, v, err, want)
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d events and notices checked", n)
	}
}

// TestBotsAreToldOfTheirMatchAndReadTypedEvents: two bots that look for
// the same game meet (FindOrCreateGame waits for the matched notice), and
// follow it with typed payloads to its end, where each can tell whether
// it won.
func TestBotsAreToldOfTheirMatchAndReadTypedEvents(t *testing.T) {
	s := startServer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	bots := []*wager.Client{s.newClient(t), s.newClient(t)}
	games := make([]string, 2)
	var wg sync.WaitGroup
	for i, c := range bots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := c.FindOrCreateGame(ctx, "rps", 0, map[string]any{"rounds": 1})
			if err != nil {
				t.Errorf("bot %d: %v", i, err)
			}
			games[i] = id
		}()
		time.Sleep(200 * time.Millisecond) // the second finds the first waiting
	}
	wg.Wait()
	if games[0] == "" || games[0] != games[1] {
		t.Fatalf("the bots are in games %q and %q, want one", games[0], games[1])
	}
	again, err := bots[0].FindOrCreateGame(ctx, "rps", 0, nil)
	if err != nil || again != games[0] {
		t.Errorf("asking again while playing: %q %v, want the same game", again, err)
	}
	f, err := bots[0].FollowGame(ctx, games[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bots[0].Move(ctx, games[0], "rock"); err != nil {
		t.Fatal(err)
	}
	if _, err := bots[1].Move(ctx, games[0], "scissors"); err != nil {
		t.Fatal(err)
	}
	var reveal *api.RulesRPSRound
	var done *api.GameCompleted
	for ev := range f.Events {
		p, err := ev.Payload()
		if err != nil {
			t.Fatalf("%s: %v", ev.Name, err)
		}
		switch p := p.(type) {
		case *api.RulesRPSView:
			if ev.Name != wager.EventJoined || len(p.Players) != 2 {
				t.Errorf("joined: %+v", p)
			}
		case *api.RulesRPSRound:
			reveal = p
		case *api.GameCompleted:
			done = p
		}
	}
	if reveal == nil || done == nil || done.WinnerId == nil || *done.WinnerId != bots[0].UserID() {
		t.Fatalf("reveal %+v, completed %+v: want the rock bot to win", reveal, done)
	}
}
