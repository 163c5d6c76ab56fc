package live

import (
	"encoding/json"
	"sync"
	"time"

	"wager/domain"
)

// Audience is a kind of subscriber that gets its own rendering of events.
type Audience uint8

// Audiences.
const (
	JSON Audience = iota // API sockets: JSON envelopes
	HTML                 // browser pages: HTML fragments for htmx
	numAudiences
)

// queueLen is how many frames a connection may have waiting before it
// counts as falling behind; reserved more are kept for the resync frames
// that tell it so.
const (
	queueLen = 48
	reserved = 8
)

// Conn is one live connection: the hub queues frames on it without ever
// blocking, and the hub's writers send them to its socket.
type Conn struct {
	UserID   string
	Audience Audience
	// Feed marks a page socket whose page shows the public activity feed
	// (?feed=1): it also gets the feed's entries.
	Feed bool

	send      chan []byte
	done      chan struct{}
	closeOnce sync.Once
	sock      *socket // the network side; nil for a connection that is only read in memory

	mu    sync.Mutex
	rooms map[domain.Stream]*room // the game and tournament rooms it is in
}

// NewConn returns a connection of a user.
func NewConn(userID string, a Audience) *Conn {
	return &Conn{UserID: userID, Audience: a, send: make(chan []byte, queueLen+reserved),
		done: make(chan struct{}), rooms: map[domain.Stream]*room{}}
}

// Frames is the connection's outgoing queue.
func (c *Conn) Frames() <-chan []byte { return c.send }

// Done is closed when the hub drops the connection.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close drops the connection (idempotent).
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.wake()
	})
}

// wake tells the writers that the socket has something to send.
func (c *Conn) wake() {
	if c.sock != nil {
		c.sock.schedule()
	}
}

// deliver queues a frame unless the queue already holds queueLen frames,
// and has the writers send it; it reports whether it queued it.
func (c *Conn) deliver(frame []byte) bool {
	if !c.enqueue(frame) {
		return false
	}
	c.wake()
	return true
}

// enqueue queues a frame unless the queue already holds queueLen frames,
// without waking the writers: it goes out with the socket's next write,
// or once wakeIfWaiting is called. It reports whether it queued it.
func (c *Conn) enqueue(frame []byte) bool {
	if len(c.send) >= queueLen {
		return false
	}
	select {
	case c.send <- frame:
		return true
	default:
		return false
	}
}

// wakeIfWaiting has the writers send what waits in the queue, if anything
// does.
func (c *Conn) wakeIfWaiting() {
	if len(c.send) > 0 {
		c.wake()
	}
}

// push queues a frame of the connection's own replay, waiting up to wait
// for room (the socket's writer drains the queue meanwhile); a connection
// that takes nothing for that long is closed. It reports whether the frame
// was queued.
func (c *Conn) push(frame []byte, wait time.Duration) bool {
	if c.deliver(frame) {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case c.send <- frame:
		c.wake()
		return true
	case <-c.done:
		return false
	case <-t.C:
		c.Close()
		return false
	}
}

// urgent queues a control frame into the reserved room; a connection
// without room even for that is not reading at all, and is closed.
func (c *Conn) urgent(frame []byte) {
	select {
	case c.send <- frame:
		c.wake()
	default:
		c.Close()
	}
}

// reply queues an answer to the client's own message (only API sockets
// get them); a client too far behind to take it is closed.
func (c *Conn) reply(v any) {
	if c.Audience != JSON {
		return
	}
	if b, err := json.Marshal(v); err == nil && !c.deliver(b) {
		c.Close()
	}
}

// joined adds a room to the connection's list, unless the connection is
// closed (false): Unregister, which closes it before it empties the list,
// then finds every room it is in.
func (c *Conn) joined(k domain.Stream, r *room) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if isDone(c.done) {
		return false
	}
	c.rooms[k] = r
	return true
}

// left takes a room out of the connection's list and returns it, nil when
// the connection is not in it.
func (c *Conn) left(k domain.Stream) *room {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rooms[k]
	delete(c.rooms, k)
	return r
}

// leaveAll empties the connection's list of rooms and returns them.
func (c *Conn) leaveAll() []*room {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*room, 0, len(c.rooms))
	for k, r := range c.rooms {
		out = append(out, r)
		delete(c.rooms, k)
	}
	return out
}
