package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
)

// Channel is the NOTIFY channel of announcements.
const Channel = "room_events"

// maxPayload keeps a NOTIFY payload under PostgreSQL's limit (8000 bytes).
const maxPayload = 7800

// gather is how long an announcement waits for more to announce: a NOTIFY
// is a commit of its own, so a busy instance sends at most one per gather.
const gather = 5 * time.Millisecond

// Announcement tells the other instances what this one's transactions
// published since its previous announcement: the newest seq of every room
// that has new events, by kind (they read the rows by seq), and the
// notices. One of nothing else says that the instance is up.
type Announcement struct {
	Instance    string         `json:"i"`
	Games       map[string]int `json:"g,omitempty"`
	Tournaments map[string]int `json:"t,omitempty"`
	Notices     []Notice       `json:"n,omitempty"`
	// Hello: the instance has just started, and asks the others for an
	// announcement, so that it learns at once that they are up.
	Hello bool `json:"h,omitempty"`
}

// seqsOf is the announcement's field of a kind of room.
func (an *Announcement) seqsOf(kind domain.StreamKind) *map[string]int {
	if kind == domain.TournamentStream {
		return &an.Tournaments
	}
	return &an.Games
}

// Streams returns the newest seq announced of each room.
func (an Announcement) Streams() map[domain.Stream]int {
	out := make(map[domain.Stream]int, len(an.Games)+len(an.Tournaments))
	for kind := range streamTables {
		for id, seq := range *an.seqsOf(kind) {
			out[domain.Stream{Kind: kind, ID: id}] = seq
		}
	}
	return out
}

// ParseAnnouncement decodes a NOTIFY payload of Channel.
func ParseAnnouncement(payload string) (Announcement, error) {
	var a Announcement
	if err := json.Unmarshal([]byte(payload), &a); err != nil {
		return a, fmt.Errorf("decode a room announcement: %w", err)
	}
	return a, nil
}

// othersRecheck is how often an instance that found itself alone looks
// again for other instances' presence rows, when it has news.
const othersRecheck = time.Second

// othersWindow is how long another instance counts as up after it was
// last heard or its presence row written. It is far longer than the rows'
// period (a second), so that a row written late under load, or a clock a
// few seconds off, does not make an instance think itself alone and drop
// what nothing else would deliver (notices). An instance left alone
// announces for nobody for this long.
const othersWindow = 30 * time.Second

// Instances tells whether other instances are up (Presence does).
type Instances interface {
	// OthersUp reports whether an instance other than instance wrote its
	// presence row within the last within.
	OthersUp(ctx context.Context, instance string, within time.Duration) (bool, error)
}

// Announcer is the Sink that tells the other instances, batched: whatever
// is published within gather of the first news goes out in one NOTIFY, so
// a busy instance sends at most one notification per gather instead of
// one per transaction, and no game transaction waits for the
// database-wide lock that NOTIFY takes at commit. A notification that is
// lost (the instance stops after a commit, before announcing) delays the
// others until their periodic check of the rooms they serve reads the
// missing events by seq; it loses nothing stored.
//
// It announces only while another instance is up: one heard from (Heard)
// or whose presence row was written, within othersWindow. An instance
// alone, the usual deployment, would otherwise pay for notifications
// nobody reads, each a commit and a wake-up of every listener, its own
// included (about 7 % of a game's CPU at 200 games, docs/performance.md).
// An instance that starts says Hello before it serves, so that the others
// announce to it at once rather than when they next find its presence
// row, and they answer, so that it learns of them as fast. The events the
// others committed before they heard it, its rooms read when they open or
// at their periodic check; a notice in that moment (a few milliseconds,
// or two seconds if the hello is lost) does not reach its sockets live.
type Announcer struct {
	db       *bun.DB
	others   Instances
	now      domain.Clock
	log      *slog.Logger
	instance string

	mu          sync.Mutex
	seqs        map[domain.Stream]int // the newest seq of each room with news
	notices     []Notice
	othersUntil time.Time // another instance is taken to be up until then
	lookedAt    time.Time // when the presence rows were last read
	answer      bool      // a hello was heard: announce, if only the instance
	wake        chan struct{}
}

// NewAnnouncer returns the Announcer of one instance; Run sends. others
// tells it whether other instances are up.
func NewAnnouncer(bdb *bun.DB, instance string, others Instances, now domain.Clock, log *slog.Logger) *Announcer {
	return &Announcer{db: bdb, others: others, now: now, log: log, instance: instance,
		seqs: map[domain.Stream]int{}, wake: make(chan struct{}, 1)}
}

// Hello tells the other instances that this one is up: they announce to it
// from then on. The instance says it once its listener runs, before it
// serves.
func (a *Announcer) Hello(ctx context.Context) error {
	if err := db.Notify(ctx, a.db, Channel, a.bare(true)); err != nil {
		return fmt.Errorf("say hello to the other instances: %w", err)
	}
	return nil
}

// bare is the payload of an announcement of nothing but the instance: a
// hello, or the answer to one.
func (a *Announcer) bare(hello bool) string {
	b, _ := json.Marshal(Announcement{Instance: a.instance, Hello: hello}) // a string and a bool: cannot fail
	return string(b)
}

// Heard takes an announcement that reached this instance: if it is
// another instance's, this one announces for othersWindow at least, and
// answers a hello.
func (a *Announcer) Heard(an Announcement) {
	if an.Instance == a.instance {
		return
	}
	a.mu.Lock()
	a.othersUntil = later(a.othersUntil, a.now().Add(othersWindow))
	a.answer = a.answer || an.Hello
	a.mu.Unlock()
	if an.Hello {
		a.wakeUp()
	}
}

// othersUp reports whether another instance may read an announcement:
// one was heard, or found by its presence row, less than othersWindow
// ago. Otherwise it reads the presence rows, at most once per
// othersRecheck (or again at once if the clock went back). When they
// cannot be read it answers yes: a notification too many costs little, a
// missing one delays the others' sockets.
func (a *Announcer) othersUp(ctx context.Context) bool {
	now := a.now()
	a.mu.Lock()
	up, since := now.Before(a.othersUntil), now.Sub(a.lookedAt)
	a.mu.Unlock()
	if up || since >= 0 && since < othersRecheck {
		return up
	}
	found, err := a.others.OthersUp(ctx, a.instance, othersWindow)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("announce room events: look for other instances; announcing", "err", err)
		}
		found = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lookedAt = now
	if found {
		a.othersUntil = later(a.othersUntil, now.Add(othersWindow))
	}
	return now.Before(a.othersUntil) // a hello heard meanwhile counts too
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Instance is the id this instance announces under.
func (a *Announcer) Instance() string { return a.instance }

// Published implements Sink: it queues p for the next announcement.
func (a *Announcer) Published(p Published) {
	a.mu.Lock()
	for _, e := range p.Events {
		a.seqs[e.Stream] = max(a.seqs[e.Stream], e.Seq)
	}
	a.notices = append(a.notices, p.Notices...)
	a.mu.Unlock()
	a.wakeUp()
}

func (a *Announcer) wakeUp() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run sends announcements until ctx is done.
func (a *Announcer) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		up := a.othersUp(ctx)
		if up {
			select {
			case <-ctx.Done():
				return
			case <-time.After(gather):
			}
		}
		a.mu.Lock()
		if !up { // nobody to tell: this instance delivered them at their commits
			clear(a.seqs)
			a.notices = nil
			a.mu.Unlock() // a hello heard since othersUp is answered next time
			continue
		}
		seqs, notices := a.seqs, a.notices
		a.seqs, a.notices = map[domain.Stream]int{}, nil
		answer := a.answer
		a.answer = false
		a.mu.Unlock()
		payloads := a.payloads(seqs, notices)
		if len(payloads) == 0 && answer {
			payloads = []string{a.bare(false)}
		}
		for _, payload := range payloads {
			if err := db.Notify(ctx, a.db, Channel, payload); err != nil && ctx.Err() == nil {
				a.log.Warn("announce room events; other instances catch up by their periodic check", "err", err)
			}
		}
	}
}

// payloads splits one batch into NOTIFY payloads under maxPayload. A notice
// too large for any payload is dropped with a log line.
func (a *Announcer) payloads(seqs map[domain.Stream]int, notices []Notice) []string {
	var out []string
	cur := Announcement{Instance: a.instance}
	size := 64
	flush := func() {
		if len(cur.Games) == 0 && len(cur.Tournaments) == 0 && len(cur.Notices) == 0 {
			return
		}
		b, _ := json.Marshal(cur)
		out = append(out, string(b))
		cur, size = Announcement{Instance: a.instance}, 64
	}
	for s, seq := range seqs {
		if size+len(s.ID)+16 > maxPayload {
			flush()
		}
		m := cur.seqsOf(s.Kind)
		if *m == nil {
			*m = map[string]int{}
		}
		(*m)[s.ID] = seq
		size += len(s.ID) + 16
	}
	for _, n := range notices {
		b, err := json.Marshal(n)
		if err != nil || len(b)+64 > maxPayload {
			a.log.Error("a notice too large to announce to other instances", "user", n.UserID, "type", n.Type, "bytes", len(b), "err", err)
			continue
		}
		if size+len(b)+1 > maxPayload {
			flush()
		}
		cur.Notices = append(cur.Notices, n)
		size += len(b) + 1
	}
	flush()
	return out
}
