package live

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// writers send the sockets' queued frames: a socket with something to
// send waits in one queue, and a few goroutines take the sockets in turn.
// An event to ten thousand sockets makes ten thousand writes by those few,
// not ten thousand goroutines runnable at once ahead of the ones that
// commit games (and of those waiting for the database's answers).
type writers struct {
	mu    sync.Mutex
	ready sync.Cond
	queue []*socket
	stop  bool
}

// numWriters is how many writers send: a few per core, so that a writer
// waiting on a slow client (at most writeSlice) leaves the others busy.
func numWriters() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

func newWriters() *writers {
	w := &writers{}
	w.ready.L = &w.mu
	return w
}

// add queues a socket (its queued flag is set).
func (w *writers) add(s *socket) {
	w.mu.Lock()
	w.queue = append(w.queue, s)
	w.mu.Unlock()
	w.ready.Signal()
}

// run writes queued sockets until close.
func (w *writers) run() {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.stop {
			w.ready.Wait()
		}
		if w.stop {
			w.mu.Unlock()
			return
		}
		s := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()
		s.write()
	}
}

// close stops the writers.
func (w *writers) close() {
	w.mu.Lock()
	w.stop = true
	w.mu.Unlock()
	w.ready.Broadcast()
}

// burst is how many queued frames a writer sends in one write to the
// network.
const burst = 64

// A writer waits at most writeSlice for a client to take the bytes of a
// write; what the client has not taken waits in the socket's buffer, and
// the socket is tried again retryAfter later (for up to writeWait without
// progress, then it is closed).
const (
	writeSlice = 2 * time.Millisecond
	retryAfter = 20 * time.Millisecond
)

// socket is the network side of a Conn.
type socket struct {
	c      *Conn
	ws     *websocket.Conn
	bc     *batchConn
	pool   *writers
	cancel context.CancelFunc // ends the socket's reads and joins
	wait   time.Duration      // writeWait

	// queued: waiting in the writers' queue, being written, waiting for a
	// retry, not started, or ended; only who sets it queues the socket.
	queued  atomic.Bool
	pingDue atomic.Bool
	ended   atomic.Bool
	ping    atomic.Pointer[time.Timer]
	gone    chan struct{} // closed when the socket is closed

	// stalled is when bytes were first left waiting for the client since
	// it last took some; closing, that the close frame was written. Both
	// the writer's alone (one at a time).
	stalled time.Time
	closing bool
}

// newSocket returns the network side of c, which starts writing at start.
func newSocket(c *Conn, ws *websocket.Conn, bc *batchConn, pool *writers) *socket {
	s := &socket{c: c, ws: ws, bc: bc, pool: pool, gone: make(chan struct{})}
	s.queued.Store(true) // not before start
	c.sock = s
	return s
}

// start lets the writers write to the socket, and ping it every
// pingPeriod.
func (s *socket) start(cancel context.CancelFunc, wait time.Duration) {
	s.cancel, s.wait = cancel, wait
	s.bc.startBuffering(s.schedule)
	s.ping.Store(time.AfterFunc(pingPeriod, s.pingTick))
	s.queued.Store(false)
	s.schedule() // whatever was queued before
}

// schedule queues the socket for the writers unless it is queued already.
func (s *socket) schedule() {
	if s.queued.CompareAndSwap(false, true) {
		s.pool.add(s)
	}
}

func (s *socket) pingTick() {
	if s.ended.Load() {
		return
	}
	s.pingDue.Store(true)
	s.schedule()
	if t := s.ping.Load(); t != nil {
		t.Reset(pingPeriod)
	}
}

// write sends what the socket has to send: the queued frames (a burst of
// them), a ping when due, or the close frame once the Conn is closed.
func (s *socket) write() {
	c := s.c
	var err error
	select {
	case <-c.done:
		if !s.closing {
			// Try again later (1013), not a policy violation: a page's
			// socket reconnects after it and joins its rooms again from
			// the seqs it shows, where a policy code would leave the page
			// silent for good.
			s.closing = true
			s.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "too far behind"))
			// The connection ends a moment later, not now: closed while
			// the client still sends, it would be reset, and the client
			// would read the reset instead of the close frame. Meanwhile
			// the socket's reader takes what the client sends, up to its
			// close answer.
			time.AfterFunc(closeGrace, s.end)
		}
		// The close frame goes out behind what was queued before it, as
		// fast as the client reads: until it is out the socket is written
		// again, and nothing else is.
		if left, err := s.flush(); err == nil && left && !s.ended.Load() {
			time.AfterFunc(retryAfter, func() { s.pool.add(s) })
		}
		return
	default:
	}
	if !s.bc.waiting() { // new frames only once the client took the last ones
		// The frames queued by now go out together: one system call for
		// a move's events instead of one each.
	frames:
		for n := 0; err == nil && n < burst; n++ {
			select {
			case f := <-c.send:
				err = s.ws.WriteMessage(websocket.TextMessage, f)
			default:
				break frames
			}
		}
		if err == nil && s.pingDue.Swap(false) {
			err = s.ws.WriteMessage(websocket.PingMessage, nil)
		}
		if errors.Is(err, websocket.ErrCloseSent) {
			// The socket's reader closed it with a close frame of its own
			// (a flood, see closeWith), which waits in the buffer: the
			// frames behind it are dropped, and the socket ends once the
			// reader is done. Ended now, the connection would be reset
			// with the close frame unsent.
			err = nil
		}
	}
	var left bool
	if err == nil {
		left, err = s.flush()
	}
	if err != nil {
		s.end()
		return
	}
	if left {
		if time.Since(s.stalled) > s.wait {
			c.Close() // not a byte taken for writeWait: the client is gone or stuck
		}
		time.AfterFunc(retryAfter, func() { s.pool.add(s) }) // still queued
		return
	}
	s.queued.Store(false)
	if len(c.send) > 0 || s.pingDue.Load() || s.bc.waiting() || isDone(c.done) {
		s.schedule()
	}
}

// flush sends the socket's waiting bytes for up to writeSlice; it reports
// whether some are left, and keeps stalled.
func (s *socket) flush() (left bool, err error) {
	sent, left, err := s.bc.flush(time.Now().Add(writeSlice))
	switch {
	case !left:
		s.stalled = time.Time{}
	case sent > 0 || s.stalled.IsZero():
		s.stalled = time.Now()
	}
	return left, err
}

// end closes the socket, once: its reads end, and so its registration.
func (s *socket) end() {
	if s.ended.Swap(true) {
		return
	}
	if t := s.ping.Load(); t != nil {
		t.Stop()
	}
	s.cancel()
	s.c.Close()
	s.ws.Close()
	s.bc.drop()
	close(s.gone)
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
