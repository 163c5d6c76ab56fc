package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"wager/domain"
)

const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = 25 * time.Second
	maxMessage = 4096
)

// MaxResume is the largest gap a join-game's lastSeq may leave to be
// answered with resumed and the missing events; past it the state
// (joined) is shorter.
const MaxResume = 1000

// Limits of one user's sockets.
const (
	// MaxSocketsPerUser is how many sockets one user holds on an instance,
	// and SocketOpensPerSecond how fast the user may open more once that
	// many were opened at once: a socket closed for flooding cannot be
	// replaced at once with a fresh allowance.
	MaxSocketsPerUser    = 20
	SocketOpensPerSecond = 1
	// MessagesPerSecond and MessageBurst bound what one socket sends: a
	// socket past them is closed (its user's other sockets are not).
	MessagesPerSecond = 20
	MessageBurst      = 40
)

// errTooManySockets and errSocketsTooFast refuse a socket, before the
// upgrade, past MaxSocketsPerUser or SocketOpensPerSecond.
var (
	errTooManySockets = domain.Errorf(domain.CodeRateLimited,
		"at most %d live sockets per user; close one first", MaxSocketsPerUser).With("retryAfterSeconds", 5)
	errSocketsTooFast = domain.Errorf(domain.CodeRateLimited,
		"live sockets are opened at most %d a second per user after the first %d", SocketOpensPerSecond, MaxSocketsPerUser).
		With("retryAfterSeconds", 1)
)

// Client is the authenticated user who opens a socket.
type Client struct {
	UserID string
	// Session is true for a browser session cookie, which only this
	// site's pages may use; a token is not ambient, so any origin may.
	Session bool
}

// Serve upgrades an authenticated request to the live socket and serves
// it until it closes: game rooms (join-game, leave-game, resume by
// lastSeq) and the user's notices. ?format=html makes it a page's socket
// (HTML fragments for htmx) instead of an API socket (JSON frames). It
// returns RATE_LIMITED, before upgrading, for a user who already holds
// MaxSocketsPerUser sockets here or opens them too fast; once upgraded it
// returns nil.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, client Client) error {
	if err := h.admit(client.UserID); err != nil {
		return err
	}
	audience := JSON
	if r.URL.Query().Get("format") == "html" {
		audience = HTML
	}
	upgrader := websocket.Upgrader{
		ReadBufferSize: 1024, WriteBufferSize: 4096, WriteBufferPool: writeBuffers,
		CheckOrigin: func(r *http.Request) bool {
			if !client.Session {
				return true
			}
			origin := r.Header.Get("Origin")
			return origin == "" || origin == "http://"+r.Host || origin == "https://"+r.Host
		},
	}
	hj := &hijacker{ResponseWriter: w}
	ws, err := upgrader.Upgrade(hj, r, nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	// The socket lives on in a goroutine of its own that reads (it starts
	// with a small stack, and the request's goroutine, whose stack grew
	// through the middleware, ends); the hub's writers write to it.
	c := NewConn(client.UserID, audience)
	c.Feed = audience == HTML && r.URL.Query().Get("feed") == "1"
	s := newSocket(c, ws, hj.conn, h.writers)
	if !h.Register(c) { // a race of upgrades past the limit
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "too many sockets"),
			time.Now().Add(time.Second))
		ws.Close()
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	s.start(cancel, h.writeWait)
	go func() {
		h.read(ctx, ws, c)
		cancel()
		h.Unregister(c)
		// The writers send what is left (a close frame) and close the
		// socket; should they not run any more, it is closed here.
		select {
		case <-s.gone:
		case <-time.After(h.writeWait + time.Second):
			ws.Close()
		}
	}()
	return nil
}

// writeBuffers lends gorilla a buffer to frame a message in only while it
// writes one, so an idle socket holds none.
var writeBuffers = &sync.Pool{}

// hijacker hands gorilla the connection wrapped in a batchConn.
type hijacker struct {
	http.ResponseWriter
	conn *batchConn
}

func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &batchConn{Conn: c}
	return h.conn, rw, nil
}

// batchConn is a socket's connection. Once the upgrade is answered, what
// gorilla writes (the writers' frames, and the reader's control frames)
// only goes into a buffer, lent while bytes wait, and the writers send
// the buffer to the network: the frames queued at once go out in one
// system call, and the bytes a slow client has not taken yet wait there
// instead of holding a writer.
type batchConn struct {
	net.Conn
	mu       sync.Mutex
	buffered bool
	buf      *bytes.Buffer // bytes not sent yet; nil when none
	wake     func()        // tells the writers that bytes wait
}

var sendBuffers = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 16<<10)) }}

// maxPooledBuffer is the largest buffer kept for another socket; a larger
// one (a slow page's backlog) goes to the garbage collector.
const maxPooledBuffer = 256 << 10

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	if !b.buffered { // the upgrade's answer, or a refusal before the socket started
		defer b.mu.Unlock()
		return b.Conn.Write(p)
	}
	if b.buf == nil {
		b.buf = sendBuffers.Get().(*bytes.Buffer)
	}
	b.buf.Write(p)
	wake := b.wake
	b.mu.Unlock()
	wake()
	return len(p), nil
}

// SetWriteDeadline ignores gorilla's deadlines once the socket started:
// the writers set their own when they send.
func (b *batchConn) SetWriteDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buffered {
		return nil
	}
	return b.Conn.SetWriteDeadline(t)
}

// startBuffering makes writes go into the buffer from here on.
func (b *batchConn) startBuffering(wake func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buffered, b.wake = true, wake
}

// waiting reports whether bytes wait to be sent.
func (b *batchConn) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf != nil
}

// flush sends the waiting bytes, waiting for the client to take them
// until deadline. It returns how many it sent and whether some are left
// (the client had not taken them by the deadline); err is any other
// failure.
func (b *batchConn) flush(deadline time.Time) (sent int, left bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		return 0, false, nil
	}
	b.Conn.SetWriteDeadline(deadline)
	sent, err = b.Conn.Write(b.buf.Bytes())
	b.buf.Next(sent)
	if b.buf.Len() == 0 {
		b.release()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil
	}
	return sent, b.buf != nil, err
}

// release gives the buffer back; b.mu is held.
func (b *batchConn) release() {
	if b.buf != nil && b.buf.Cap() <= maxPooledBuffer {
		b.buf.Reset()
		sendBuffers.Put(b.buf)
	}
	b.buf = nil
}

// drop forgets the waiting bytes of a socket that is closed.
func (b *batchConn) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.release()
}

// closeGrace is how long a socket closed by the server waits for the
// client's answer to its close frame, and closeFlushWait how long at
// most for the frame to go out behind what was queued before it.
// Under load a client may take seconds to read the frames queued before
// the close frame: with 1 s, a full test run saw the connection end
// first (a reset instead of the close code).
const (
	closeGrace     = 5 * time.Second
	closeFlushWait = 5 * time.Second
)

// closeWith sends the client a close frame with code and reason, then
// discards what the client still sends until it answers with its own
// close frame (or closeGrace passes): a connection closed with data
// unread is reset, and a client that is still sending would then see the
// reset instead of the reason.
func closeWith(ws *websocket.Conn, code int, reason string) {
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	// The close frame goes out behind the frames queued before it (the
	// flood's answers): the client's answer is awaited once it is out,
	// or the connection could end with the frame still queued, and the
	// client would read an abnormal closure instead of the reason.
	if bc, ok := ws.NetConn().(*batchConn); ok {
		for out := time.Now().Add(closeFlushWait); bc.waiting() && time.Now().Before(out); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	ws.SetReadDeadline(time.Now().Add(closeGrace))
	for {
		if _, _, err := ws.NextReader(); err != nil {
			return
		}
	}
}

func (h *Hub) read(ctx context.Context, ws *websocket.Conn, c *Conn) {
	ws.SetReadLimit(maxMessage)
	ws.SetReadDeadline(time.Now().Add(pongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(pongWait)) })
	flood := rate.NewLimiter(MessagesPerSecond, MessageBurst)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		if !flood.Allow() {
			closeWith(ws, websocket.ClosePolicyViolation, "too many messages")
			return
		}
		var m ClientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			c.reply(ErrorFrame{Type: "error", Code: domain.CodeInvalidJSON, Message: "messages are JSON objects with a type"})
			continue
		}
		if id, ok := domain.CanonicalID(m.GameID); ok {
			m.GameID = id // rooms are keyed by the canonical id
		}
		if id, ok := domain.CanonicalID(m.TournamentID); ok {
			m.TournamentID = id
		}
		switch m.Type {
		case "join-game":
			h.join(ctx, c, domain.GameStreamOf(m.GameID), m.LastSeq)
		case "leave-game":
			h.leave(c, domain.GameStreamOf(m.GameID))
		case "join-tournament":
			h.join(ctx, c, domain.TournamentStreamOf(m.TournamentID), m.LastSeq)
		case "leave-tournament":
			h.leave(c, domain.TournamentStreamOf(m.TournamentID))
		case "ping":
			// Pages too: the game page shows the connection's quality.
			if b, err := json.Marshal(PongFrame{Type: "pong", At: time.Now().UTC()}); err == nil && !c.deliver(b) {
				c.Close()
			}
		default:
			c.reply(ErrorFrame{Type: "error", Code: domain.CodeValidation, Message: "unknown message type " + m.Type})
		}
	}
}

// join answers a join-game or join-tournament: joined with the state (or
// resumed when lastSeq can be continued from), then every event after it.
func (h *Hub) join(ctx context.Context, c *Conn, s domain.Stream, lastSeq int) {
	w := wireOf(s.Kind)
	j, err := h.kinds[s.Kind].Join(ctx, s.ID, c.UserID, lastSeq)
	if err != nil {
		c.reply(w.errorIn(errorFrame(err), s.ID))
		return
	}
	after, resumed := resumeAfter(c.Audience, lastSeq, j.Seq)
	switch {
	case resumed:
		c.reply(w.resumedFrame(s.ID, lastSeq))
	case j.Ended != nil:
		c.reply(w.errorIn(errorFrame(j.Ended), s.ID))
		return
	default:
		c.reply(w.joinedFrame(s.ID, j))
	}
	if j.Latest > j.Seq {
		h.Announced(s, j.Latest) // a spectator's state is older than the room's newest events
	}
	if err := h.Join(ctx, c, s, after, j.Seq, j.Player, j.Delay); err != nil {
		h.log.Error("live: join a room", "room", s, "err", err)
		c.reply(w.errorIn(errorFrame(err), s.ID))
	}
}

// leave answers a leave-game or leave-tournament.
func (h *Hub) leave(c *Conn, s domain.Stream) {
	h.Leave(c, s)
	c.reply(wireOf(s.Kind).leftFrame(s.ID))
}

// resumeAfter returns the seq a join continues after, and whether that is
// the client's lastSeq (answered with resumed). A resume whose gap the
// store holds continues from lastSeq; any other join starts from the
// state at seq (answered with joined), and only later events follow it,
// so that a client applies each event once, in order, on top of what it
// has. Pages always continue from the seq their HTML was rendered at, and
// get no answer frame.
func resumeAfter(a Audience, lastSeq, seq int) (int, bool) {
	switch {
	case a == HTML && lastSeq > 0:
		return lastSeq, false
	case lastSeq > 0 && lastSeq <= seq && seq-lastSeq <= MaxResume:
		return lastSeq, true
	}
	return seq, false
}

// errorFrame answers a message that failed with err (a domain error's
// code and message; any other is INTERNAL); wire.errorIn names its room.
func errorFrame(err error) ErrorFrame {
	var e *domain.Error
	if errors.As(err, &e) {
		return ErrorFrame{Type: "error", Code: e.Code, Message: e.Message}
	}
	return ErrorFrame{Type: "error", Code: domain.CodeInternal, Message: "something went wrong; try again"}
}
