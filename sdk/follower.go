package wager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// frame is any frame of the socket, as far as following a room needs.
type frame struct {
	Type         string          `json:"type"`
	Event        string          `json:"event"`
	GameID       string          `json:"gameId"`
	TournamentID string          `json:"tournamentId"`
	Seq          int64           `json:"seq"`
	Ahead        bool            `json:"ahead"`
	Data         json.RawMessage `json:"data"`
	State        json.RawMessage `json:"state"`
	Tournament   json.RawMessage `json:"tournament"`
	Code         string          `json:"code"`
	Message      string          `json:"message"`
}

// room is what sets one kind of room of the live socket (a game's, a
// tournament's) apart from another, for the loop that follows it.
type room[E any] struct {
	kind string // "game" or "tournament", to name it in errors
	id   string
	// join is the type of the frame that joins the room, idKey the field
	// of that frame that names it.
	join, idKey string
	// The types of the frames that answer a join (joined: with the room's
	// state; resumed: the events after lastSeq follow) and that tell the
	// socket it left the room (resync).
	joined, resumed, resync string
	// state is the room's state that a joined frame carries: the data of
	// the first event, which is named as that frame.
	state func(fr *frame) json.RawMessage
	// over reports whether that state is of a room already over (nil:
	// none is joined over): following then ends with the first event.
	over func(state json.RawMessage) bool
	// mine reports whether a frame is not another room's.
	mine func(fr *frame) bool
	// event makes the event delivered, and ahead one sent ahead of its
	// turn (nil: the room sends none).
	event, ahead func(seq int64, name string, data json.RawMessage) E
	// presence names an event that is not stored ("": none): it is passed
	// on as it comes, whatever its seq.
	presence string
	// final names the events after which the room has no more.
	final []string
	// record reads the room's recorded events after seq after (none when
	// the API answers without them).
	record func(ctx context.Context, after int64) ([]recorded, error)
	// refused says what the API's refusal to rejoin means, when the
	// socket itself was not refused (401, 403, an outdated SDK: Err
	// reports those).
	refused func(ae *APIError) ending
	// failed says what an error frame on a joined socket means.
	failed func(fr *frame) ending
}

// recorded is one event of a room's record (GET .../events).
type recorded struct {
	Seq  int64  `json:"seq"`
	Name string `json:"event"`
	Data any    `json:"data"`
}

// recordPage returns the events of a page of a room's record that the API
// answered with status and body: none unless the status is 200.
func recordPage(status int, body []byte) ([]recorded, error) {
	if status != http.StatusOK {
		return nil, nil
	}
	var page struct {
		Events []recorded `json:"events"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("wager: reading a room's record: %w", err)
	}
	return page.Events, nil
}

// ending is what a refusal means for following.
type ending int

const (
	goOn       ending = iota // retry the join later, or read on
	readRecord               // the room is over: the rest of its events are read over HTTP
	giveUp                   // following stops and Err reports the refusal
	resume                   // the socket is dropped, and following resumes from the last seq on a new one
)

// errOver stops following after the room's last event.
var errOver = errors.New("room over")

// follower follows one room: it delivers the room's events to out, each
// once and in seq order, across reconnects, until the room's last event,
// the end of the context, or an error that reconnecting cannot cure. Its
// zero value, as in a Follow made outside the package, reports no error
// and no reconnect.
type follower[E any] struct {
	c    *Client
	room room[E]
	out  chan E
	last int64 // the seq of the last event delivered
	// early are the seqs after last delivered ahead of their turn, which
	// are not delivered again in it.
	early map[int64]bool

	mu         sync.Mutex
	err        error
	reconnects int
}

func (f *follower[E]) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *follower[E]) Reconnects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reconnects
}

func (f *follower[E]) fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// stopped notes the error that ended following, unless it is the room's
// end or ctx's.
func (f *follower[E]) stopped(ctx context.Context, err error) {
	if err != nil && err != errOver && ctx.Err() == nil {
		f.fail(err)
	}
}

// sendJoin asks the room for the events after seq last on conn.
func (f *follower[E]) sendJoin(conn *websocket.Conn, last int64) error {
	return conn.WriteJSON(map[string]any{"type": f.room.join, f.room.idKey: f.room.id, "lastSeq": last})
}

// connect opens a socket, joins the room after seq last and waits for the
// answer: resumed (the events after last follow), joined (the room as of
// its seq, then the events after it), or the refusal as an *APIError.
func (f *follower[E]) connect(ctx context.Context, last int64) (*websocket.Conn, frame, error) {
	c := f.c
	token, err := c.validToken(ctx)
	if err != nil {
		return nil, frame{}, err
	}
	conn, err := c.dial(ctx, token)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && c.wallet != nil {
		if token, err = c.renew(ctx, token); err != nil {
			return nil, frame{}, err
		}
		conn, err = c.dial(ctx, token)
	}
	if err != nil {
		return nil, frame{}, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := f.sendJoin(conn, last); err != nil {
		conn.Close()
		return nil, frame{}, err
	}
	for {
		var fr frame
		if err := conn.ReadJSON(&fr); err != nil {
			conn.Close()
			if ctx.Err() != nil {
				return nil, frame{}, ctx.Err()
			}
			return nil, frame{}, fmt.Errorf("wager: joining %s %s: %w", f.room.kind, f.room.id, err)
		}
		switch fr.Type {
		case f.room.joined, f.room.resumed:
			return conn, fr, nil
		case "error":
			conn.Close()
			return nil, frame{}, &APIError{Status: statusOf(fr.Code), Code: fr.Code, Message: fr.Message}
		}
	}
}

// start joins room r for c and delivers to *events, first, the room's
// state; then it follows the room until its end, unless that state is
// already the end. It returns the refusal of the socket or the join.
func (f *follower[E]) start(ctx context.Context, c *Client, r room[E], events *<-chan E) error {
	f.c, f.room, f.out = c, r, make(chan E, 256)
	*events = f.out
	conn, joined, err := f.connect(ctx, 0)
	if err != nil {
		return err
	}
	f.last = joined.Seq // the state's: only later events follow
	state := r.state(&joined)
	f.out <- r.event(joined.Seq, r.joined, state)
	if r.over != nil && r.over(state) {
		conn.Close()
		close(f.out)
		return nil
	}
	go f.run(ctx, conn)
	return nil
}

// run reads the socket until the room ends or ctx ends, reconnecting
// after every disconnect, and closes out.
func (f *follower[E]) run(ctx context.Context, conn *websocket.Conn) {
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
// over: ctx ended, the room ended meanwhile (its events up to the end are
// then read over HTTP), or an error that retrying cannot cure (Err says
// which).
func (f *follower[E]) reconnect(ctx context.Context) *websocket.Conn {
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
		if errors.As(err, &up) || (errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden)) {
			f.fail(err)
			return nil
		}
		if errors.As(err, &ae) {
			switch f.room.refused(ae) {
			case readRecord:
				f.finish(ctx)
				return nil
			case giveUp:
				f.fail(err)
				return nil
			}
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// read delivers the socket's events until it breaks (false: reconnect),
// or following is over (true): the room ended, ctx ended, or an error
// that Err reports.
func (f *follower[E]) read(ctx context.Context, conn *websocket.Conn) (done bool) {
	defer watch(ctx, conn)()
	for {
		var fr frame
		if err := conn.ReadJSON(&fr); err != nil {
			return ctx.Err() != nil
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
		if !f.room.mine(&fr) {
			continue
		}
		var err error
		switch fr.Type {
		case "event":
			if fr.Ahead && f.room.ahead != nil {
				err = f.deliverAhead(ctx, fr)
			} else if f.room.presence != "" && fr.Event == f.room.presence {
				err = f.send(ctx, f.room.event(fr.Seq, fr.Event, fr.Data)) // its seq is not its own
			} else {
				err = f.deliver(ctx, fr.Seq, fr.Event, fr.Data)
			}
		case f.room.joined:
			// The answer to a rejoin whose gap was too long to replay.
			err = f.bridge(ctx, fr)
		case f.room.resync:
			// Left the room: rejoin after the last seq on the same socket.
			if f.sendJoin(conn, f.last) != nil {
				return false
			}
		case "error":
			switch f.room.failed(&fr) {
			case readRecord:
				// A rejoin after the room ended: the rest is on record.
				f.finish(ctx)
				return true
			case giveUp:
				err = &APIError{Status: statusOf(fr.Code), Code: fr.Code, Message: fr.Message}
			case resume:
				return false
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
// following is over: errOver after the room's last event.
func (f *follower[E]) deliver(ctx context.Context, seq int64, name string, data json.RawMessage) error {
	if seq <= f.last {
		return nil
	}
	if seq > f.last+1 {
		if err := f.catchUp(ctx, seq-1); err != nil {
			return err
		}
	}
	if f.early[seq] {
		delete(f.early, seq)
	} else if err := f.send(ctx, f.room.event(seq, name, data)); err != nil {
		return err
	}
	f.last = seq
	if slices.Contains(f.room.final, name) {
		return errOver
	}
	return nil
}

// deliverAhead passes on an event sent ahead of its turn, once: the room
// sends it again in its place, after a reconnect too.
func (f *follower[E]) deliverAhead(ctx context.Context, fr frame) error {
	if fr.Seq <= f.last || f.early[fr.Seq] {
		return nil
	}
	if f.early == nil {
		f.early = map[int64]bool{}
	}
	f.early[fr.Seq] = true
	return f.send(ctx, f.room.ahead(fr.Seq, fr.Event, fr.Data))
}

func (f *follower[E]) send(ctx context.Context, ev E) error {
	select {
	case f.out <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// catchUp delivers the recorded events after the last one delivered, up
// to seq upTo (0: all of them). It returns errOver when it delivered the
// room's last event.
func (f *follower[E]) catchUp(ctx context.Context, upTo int64) error {
	for upTo == 0 || f.last < upTo {
		after := f.last
		events, err := f.room.record(ctx, after)
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.Seq != f.last+1 || (upTo != 0 && e.Seq > upTo) {
				continue
			}
			data, err := json.Marshal(e.Data)
			if err != nil {
				return err
			}
			if err := f.deliver(ctx, e.Seq, e.Name, data); err != nil {
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
// joined frame's seq, which the socket does not replay.
func (f *follower[E]) bridge(ctx context.Context, fr frame) error {
	if fr.Type != f.room.joined || fr.Seq <= f.last {
		return nil
	}
	return f.catchUp(ctx, fr.Seq)
}

// finish reads the rest of a room that is over from its record, and
// notes an error that stopped it.
func (f *follower[E]) finish(ctx context.Context) {
	f.stopped(ctx, f.catchUp(ctx, 0))
}
