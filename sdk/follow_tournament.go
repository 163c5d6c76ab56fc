package wager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"wager/sdk/api"
)

// Event names of a tournament's room (API.md "Tournaments (arenas)").
const (
	// EventTournamentJoined is the first event of FollowTournament: Data
	// is the tournament as GET /tournaments/:id answers it
	// (*api.TournamentDetail) and Seq the seq it reflects.
	EventTournamentJoined = "joined-tournament"
	// EventTournamentStandings: the first 100 lines of the standings, at
	// most once a second while they change (*api.TournamentStandings).
	EventTournamentStandings = "tournament:standings"
	// EventTournamentPairing: a game of the tournament started
	// (*api.TournamentPaired).
	EventTournamentPairing = "tournament:pairing"
	// EventTournamentStarted: the tournament started (*api.TournamentStarted).
	EventTournamentStarted = "tournament:started"
	// EventTournamentCancelled ends a tournament that had fewer than two
	// players at its start, every entry refunded
	// (*api.TournamentCancelled); the channel closes after it.
	EventTournamentCancelled = "tournament:cancelled"
	// EventTournamentFinished ends a tournament, with its prizes and final
	// standings (*api.TournamentFinished); the channel closes after it.
	EventTournamentFinished = "tournament:finished"
)

// TournamentEvent is one event of a followed tournament.
type TournamentEvent struct {
	TournamentID string
	// Seq numbers the tournament's events from 1, without gaps.
	Seq int64
	// Name is the event's name (the EventTournament constants).
	Name string
	// Data is the event's payload; its shape depends on Name.
	Data json.RawMessage
}

// Payload returns the event's data decoded into its type: for
// EventTournamentJoined an *api.TournamentDetail, for
// EventTournamentPairing an *api.TournamentPaired, and so on (see the
// EventTournament constants). It returns an error for a name this SDK
// does not know (a newer server's) or data that does not decode.
func (e TournamentEvent) Payload() (any, error) {
	if e.Name == EventTournamentJoined {
		v := new(api.TournamentDetail)
		return v, decode(e.Name, e.Data, v)
	}
	return payload(payloads, e.Name, e.Data)
}

// TournamentFollow is a tournament followed live. Events delivers every
// event of the tournament after the one FollowTournament started from,
// each once and in seq order, across reconnects; it closes after
// tournament:finished or tournament:cancelled (at once after the first
// event when the tournament was already over), when the context ends, or
// on an error that reconnecting cannot cure (then Err says which).
type TournamentFollow struct {
	Events <-chan TournamentEvent

	c    *Client
	id   string
	out  chan TournamentEvent
	last int64 // the seq of the last event delivered

	mu         sync.Mutex
	err        error
	reconnects int
}

// Err returns why Events closed early: nil after the tournament's end or
// when the context ended, else the error.
func (f *TournamentFollow) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Reconnects returns how many times the socket was opened again.
func (f *TournamentFollow) Reconnects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reconnects
}

func (f *TournamentFollow) fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// tournamentFrame is any frame of the socket, as far as following a
// tournament needs.
type tournamentFrame struct {
	Type         string          `json:"type"`
	Event        string          `json:"event"`
	TournamentID string          `json:"tournamentId"`
	GameID       string          `json:"gameId"`
	Seq          int64           `json:"seq"`
	Data         json.RawMessage `json:"data"`
	Tournament   json.RawMessage `json:"tournament"`
	Code         string          `json:"code"`
	Message      string          `json:"message"`
}

// errTournamentOver stops following after the tournament's last event.
var errTournamentOver = errors.New("tournament over")

// FollowTournament opens the live socket (/ws), joins the tournament's
// room and returns its events; the first is EventTournamentJoined with
// the tournament. After a disconnect it reconnects and rejoins from the
// last seq it delivered (reading over HTTP what the room cannot replay),
// so that no event is lost or repeated; told to resync, it rejoins the
// same way. It needs a signed-in client (a wallet or a token). It returns
// the API's error when the socket is refused or the join fails (*APIError
// with NOT_FOUND).
func (c *Client) FollowTournament(ctx context.Context, id string) (*TournamentFollow, error) {
	out := make(chan TournamentEvent, 256)
	f := &TournamentFollow{Events: out, c: c, id: id, out: out}
	conn, joined, err := f.connect(ctx, 0)
	if err != nil {
		return nil, err
	}
	f.last = joined.Seq
	out <- TournamentEvent{TournamentID: id, Seq: joined.Seq, Name: EventTournamentJoined, Data: joined.Tournament}
	var head struct {
		Status string `json:"status"`
	}
	json.Unmarshal(joined.Tournament, &head)
	if head.Status == "finished" || head.Status == "cancelled" {
		conn.Close()
		close(out)
		return f, nil
	}
	go f.run(ctx, conn)
	return f, nil
}

// join asks the room for the events after seq last on conn.
func (f *TournamentFollow) join(conn *websocket.Conn, last int64) error {
	return conn.WriteJSON(map[string]any{"type": "join-tournament", "tournamentId": f.id, "lastSeq": last})
}

// connect opens a socket, joins the room after seq last and waits for the
// answer: resumed-tournament (the events after last follow),
// joined-tournament (the tournament as of its seq, then the events after
// it), or the refusal as an *APIError.
func (f *TournamentFollow) connect(ctx context.Context, last int64) (*websocket.Conn, tournamentFrame, error) {
	c := f.c
	token, err := c.validToken(ctx)
	if err != nil {
		return nil, tournamentFrame{}, err
	}
	conn, err := c.dial(ctx, token)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && c.wallet != nil {
		if token, err = c.renew(ctx, token); err != nil {
			return nil, tournamentFrame{}, err
		}
		conn, err = c.dial(ctx, token)
	}
	if err != nil {
		return nil, tournamentFrame{}, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := f.join(conn, last); err != nil {
		conn.Close()
		return nil, tournamentFrame{}, err
	}
	for {
		var fr tournamentFrame
		if err := conn.ReadJSON(&fr); err != nil {
			conn.Close()
			if ctx.Err() != nil {
				return nil, tournamentFrame{}, ctx.Err()
			}
			return nil, tournamentFrame{}, fmt.Errorf("wager: joining tournament %s: %w", f.id, err)
		}
		switch fr.Type {
		case "joined-tournament", "resumed-tournament":
			return conn, fr, nil
		case "error":
			conn.Close()
			return nil, tournamentFrame{}, &APIError{Status: statusOf(fr.Code), Code: fr.Code, Message: fr.Message}
		}
	}
}

// run reads the socket until the tournament ends or ctx ends,
// reconnecting after every disconnect.
func (f *TournamentFollow) run(ctx context.Context, conn *websocket.Conn) {
	defer close(f.out)
	for {
		done := f.read(ctx, conn)
		conn.Close()
		if done || ctx.Err() != nil {
			return
		}
		if conn = f.reconnect(ctx); conn == nil {
			return
		}
	}
}

// reconnect opens the socket again and rejoins after the last seq,
// waiting longer after each failure. It returns nil when following is
// over: ctx ended, the tournament ended meanwhile, or an error that
// retrying cannot cure (Err says which).
func (f *TournamentFollow) reconnect(ctx context.Context) *websocket.Conn {
	wait := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		conn, fr, err := f.connect(ctx, f.last)
		if err == nil {
			f.mu.Lock()
			f.reconnects++
			f.mu.Unlock()
			if err := f.bridge(ctx, fr); err != nil {
				conn.Close()
				f.stopped(ctx, err)
				return nil
			}
			return conn
		}
		var ae *APIError
		var up *UpgradeRequiredError
		if errors.As(err, &up) || (errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500) {
			f.fail(err)
			return nil
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// stopped notes the error that ended following, unless it is the
// tournament's end or ctx's.
func (f *TournamentFollow) stopped(ctx context.Context, err error) {
	if err != errTournamentOver && ctx.Err() == nil {
		f.fail(err)
	}
}

// read delivers the socket's events until it breaks (false: reconnect),
// or following is over (true): the tournament ended, ctx ended, or an
// error that Err reports.
func (f *TournamentFollow) read(ctx context.Context, conn *websocket.Conn) (done bool) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPingHandler(func(data string) error {
		conn.SetReadDeadline(time.Now().Add(pongWait))
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
	})
	for {
		var fr tournamentFrame
		if err := conn.ReadJSON(&fr); err != nil {
			return ctx.Err() != nil
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
		if fr.GameID != "" || (fr.TournamentID != "" && !strings.EqualFold(fr.TournamentID, f.id)) {
			continue
		}
		var err error
		switch fr.Type {
		case "event":
			err = f.deliver(ctx, TournamentEvent{TournamentID: f.id, Seq: fr.Seq, Name: fr.Event, Data: fr.Data})
		case "joined-tournament":
			// The answer to a rejoin whose gap was too long to replay.
			err = f.bridge(ctx, fr)
		case "resync-tournament":
			// Left the room: rejoin after the last seq on the same socket.
			if f.join(conn, f.last) != nil {
				return false
			}
		case "error":
			if fr.TournamentID != "" {
				err = &APIError{Status: statusOf(fr.Code), Code: fr.Code, Message: fr.Message}
			}
		}
		if err != nil {
			f.stopped(ctx, err)
			return true
		}
	}
}

// deliver passes one event on, dropping one already delivered and reading
// over HTTP any that a gap before it would lose. It returns an error when
// following is over.
func (f *TournamentFollow) deliver(ctx context.Context, ev TournamentEvent) error {
	if ev.Seq <= f.last {
		return nil
	}
	if ev.Seq > f.last+1 {
		if err := f.catchUp(ctx, ev.Seq-1); err != nil {
			return err
		}
	}
	select {
	case f.out <- ev:
	case <-ctx.Done():
		return ctx.Err()
	}
	f.last = ev.Seq
	if ev.Name == EventTournamentFinished || ev.Name == EventTournamentCancelled {
		return errTournamentOver
	}
	return nil
}

// catchUp delivers the recorded events after the last one delivered, up
// to seq upTo, from GET /tournaments/:id/events.
func (f *TournamentFollow) catchUp(ctx context.Context, upTo int64) error {
	for f.last < upTo {
		after := f.last
		r, err := f.c.API.GetTournamentsByIdEventsWithResponse(ctx, f.id, &api.GetTournamentsByIdEventsParams{After: &after})
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return nil
		}
		for _, e := range r.JSON200.Events {
			if e.Seq != f.last+1 || e.Seq > upTo {
				continue
			}
			data, err := json.Marshal(e.Data)
			if err != nil {
				return err
			}
			if err := f.deliver(ctx, TournamentEvent{TournamentID: f.id, Seq: e.Seq, Name: e.Event, Data: data}); err != nil {
				return err
			}
		}
		if f.last == after {
			return nil // nothing more on record
		}
	}
	return nil
}

// bridge reads over HTTP the events between the last one delivered and a
// joined-tournament frame's seq, which the socket does not replay.
func (f *TournamentFollow) bridge(ctx context.Context, fr tournamentFrame) error {
	if fr.Type != "joined-tournament" || fr.Seq <= f.last {
		return nil
	}
	return f.catchUp(ctx, fr.Seq)
}
