package wager

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A rejoin after a resync that the server answers with an error (here
// INTERNAL) leaves the socket outside the room: the follower must not
// wait there for events that never come, but resume on a new socket from
// the last seq it delivered. The real server cannot be made to fail a
// rejoin on purpose, so this server is a script of the protocol's frames.
func TestAFailedRejoinResumesOnANewSocket(t *testing.T) {
	var sockets atomic.Int32
	upgrader := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		n := sockets.Add(1)
		var join struct {
			Type    string `json:"type"`
			LastSeq int64  `json:"lastSeq"`
		}
		send := func(v any) {
			if err := conn.WriteJSON(v); err != nil {
				t.Errorf("socket %d: %v", n, err)
			}
		}
		if err := conn.ReadJSON(&join); err != nil {
			return
		}
		switch n {
		case 1: // joined at 5, one event, then told to resync; the rejoin fails
			send(map[string]any{"type": "joined", "gameId": "g1", "seq": 5, "state": json.RawMessage(`{}`)})
			send(map[string]any{"type": "event", "gameId": "g1", "seq": 6, "event": "game:move", "data": map[string]any{}})
			send(map[string]any{"type": "resync", "gameId": "g1"})
			if err := conn.ReadJSON(&join); err != nil || join.LastSeq != 6 {
				t.Errorf("the rejoin after the resync: %+v, %v; want lastSeq 6", join, err)
			}
			send(map[string]any{"type": "error", "gameId": "g1", "code": "INTERNAL", "message": "try again"})
		default: // the new socket resumes after 6 and gets 7
			if join.LastSeq != 6 {
				t.Errorf("socket %d joined after %d, want 6", n, join.LastSeq)
			}
			send(map[string]any{"type": "resumed", "gameId": "g1", "seq": 6})
			send(map[string]any{"type": "event", "gameId": "g1", "seq": 7, "event": "game:move", "data": map[string]any{}})
		}
		// Hold the socket open, as a server that still pings it would, until
		// the client leaves it.
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer srv.Close()

	c, err := New(srv.URL, WithToken("token"), WithAppID("test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := c.FollowGame(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for ev := range f.Events {
		seqs = append(seqs, ev.Seq)
		if ev.Seq == 7 {
			break
		}
	}
	if want := []int64{5, 6, 7}; !slices.Equal(seqs, want) {
		t.Errorf("delivered seqs %v, want %v", seqs, want)
	}
	if n := sockets.Load(); n != 2 {
		t.Errorf("sockets opened: %d, want 2", n)
	}
}

// A page of a room's record is read as its events, whatever the kind of
// room; any answer but a 200 has none.
func TestARecordPageIsReadAsItsEvents(t *testing.T) {
	body := []byte(`{"events":[{"seq":3,"event":"game:move","gameId":"g1","createdAt":"2024-01-01T00:00:00Z","data":{"b":1,"a":"x"}},` +
		`{"seq":4,"event":"tournament:pairing","tournamentId":"t1","data":{}}]}`)
	got, err := recordPage(http.StatusOK, body)
	if err != nil {
		t.Fatal(err)
	}
	want := []recorded{
		{Seq: 3, Name: "game:move", Data: map[string]any{"a": "x", "b": 1.0}},
		{Seq: 4, Name: "tournament:pairing", Data: map[string]any{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("recordPage: %+v, want %+v", got, want)
	}
	if got, err := recordPage(http.StatusNotFound, []byte(`{"code":"NOT_FOUND"}`)); got != nil || err != nil {
		t.Errorf("recordPage of a 404: %+v, %v; want none", got, err)
	}
	if _, err := recordPage(http.StatusOK, []byte(`<html>`)); err == nil {
		t.Error("recordPage of a body that is not JSON: no error")
	}
}
