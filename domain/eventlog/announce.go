package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Channel is the NOTIFY channel of announcements.
const Channel = "room_events"

// maxPayload keeps a NOTIFY payload under PostgreSQL's limit (8000 bytes).
const maxPayload = 7800

// gather is how long an announcement waits for more to announce: a NOTIFY
// is a commit of its own, so a busy instance sends at most one per gather.
const gather = 5 * time.Millisecond

// Announcement tells the other instances what this one's transactions
// published since its previous announcement: the newest seq of every game
// and every tournament that has new events (they read the rows by seq),
// and the notices.
type Announcement struct {
	Instance    string         `json:"i"`
	Games       map[string]int `json:"g,omitempty"`
	Tournaments map[string]int `json:"t,omitempty"`
	Notices     []Notice       `json:"n,omitempty"`
}

// ParseAnnouncement decodes a NOTIFY payload of Channel.
func ParseAnnouncement(payload string) (Announcement, error) {
	var a Announcement
	if err := json.Unmarshal([]byte(payload), &a); err != nil {
		return a, fmt.Errorf("decode a room announcement: %w", err)
	}
	return a, nil
}

// Announcer is the Sink that tells the other instances, batched: whatever
// is published within gather of the first news goes out in one NOTIFY, so
// a busy instance sends at most one notification per gather instead of
// one per transaction, and no game transaction waits for the
// database-wide lock that NOTIFY takes at commit. A notification that is
// lost (the instance stops after a commit, before announcing) delays the
// others until their periodic check of the rooms they serve reads the
// missing events by seq; it loses nothing stored.
type Announcer struct {
	db       *bun.DB
	log      *slog.Logger
	instance string

	mu          sync.Mutex
	games       map[string]int
	tournaments map[string]int
	notices     []Notice
	wake        chan struct{}
}

// NewAnnouncer returns the Announcer of one instance; Run sends.
func NewAnnouncer(bdb *bun.DB, instance string, log *slog.Logger) *Announcer {
	return &Announcer{db: bdb, log: log, instance: instance, games: map[string]int{}, tournaments: map[string]int{},
		wake: make(chan struct{}, 1)}
}

// Instance is the id this instance announces under.
func (a *Announcer) Instance() string { return a.instance }

// Published implements Sink: it queues p for the next announcement.
func (a *Announcer) Published(p Published) {
	a.mu.Lock()
	for _, e := range p.Events {
		a.games[e.GameID] = max(a.games[e.GameID], e.Seq)
	}
	a.notices = append(a.notices, p.Notices...)
	a.mu.Unlock()
	a.wakeUp()
}

// Tournament queues a tournament's newest seq for the next announcement:
// tournaments' events go out with the games', in the same notifications.
func (a *Announcer) Tournament(id string, seq int) {
	a.mu.Lock()
	a.tournaments[id] = max(a.tournaments[id], seq)
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
		select {
		case <-ctx.Done():
			return
		case <-time.After(gather):
		}
		a.mu.Lock()
		games, tournaments, notices := a.games, a.tournaments, a.notices
		a.games, a.tournaments, a.notices = map[string]int{}, map[string]int{}, nil
		a.mu.Unlock()
		for _, payload := range a.payloads(games, tournaments, notices) {
			if _, err := a.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", Channel, payload); err != nil && ctx.Err() == nil {
				a.log.Warn("announce room events; other instances catch up by their periodic check", "err", err)
			}
		}
	}
}

// payloads splits one batch into NOTIFY payloads under maxPayload. A notice
// too large for any payload is dropped with a log line.
func (a *Announcer) payloads(games, tournaments map[string]int, notices []Notice) []string {
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
	addSeqs := func(seqs map[string]int, field func(*Announcement) *map[string]int) {
		for id, seq := range seqs {
			if size+len(id)+16 > maxPayload {
				flush()
			}
			m := field(&cur)
			if *m == nil {
				*m = map[string]int{}
			}
			(*m)[id] = seq
			size += len(id) + 16
		}
	}
	addSeqs(games, func(an *Announcement) *map[string]int { return &an.Games })
	addSeqs(tournaments, func(an *Announcement) *map[string]int { return &an.Tournaments })
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
