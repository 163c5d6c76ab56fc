package notify_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/notify"
)

// notices keeps what the room log publishes.
type notices struct {
	mu   sync.Mutex
	list []eventlog.Notice
}

func (n *notices) Published(p eventlog.Published) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, p.Notices...)
}

func newUser(t *testing.T, bdb *bun.DB) string {
	t.Helper()
	id := uuid.NewString()
	if _, err := bdb.ExecContext(t.Context(), "INSERT INTO users (id, wallet_address, username) VALUES (?, ?, ?)",
		id, "w"+id, "u"+id[:8]); err != nil {
		t.Fatal(err)
	}
	return id
}

type note struct {
	Text string `json:"text"`
}

// SendMany stores every message in one statement, each user's count
// including the unread they had and all of this call's, and pushes each
// notification to its own user once the transaction commits.
func TestSendManyStoresCountsAndPushesEach(t *testing.T) {
	bdb := dbtest.DB(t)
	sink := &notices{}
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	s := notify.New(bdb, eventlog.New(bdb, sink), func() time.Time { return at })
	a, b := newUser(t, bdb), newUser(t, bdb)
	ctx := context.Background()
	// a has two unread notifications and one read one before.
	if err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		for range 3 {
			if err := s.Send(ctx, tx, a, notify.Tip, note{"before"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p, err := s.List(ctx, a, false, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkRead(ctx, a, p.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	sink.list = nil
	sink.mu.Unlock()

	msgs := []notify.Message{
		{UserID: a, Type: notify.GameCompleted, Data: note{"a1"}},
		{UserID: b, Type: notify.GameCompleted, Data: note{"b1"}},
		{UserID: a, Type: notify.Achievement, Data: note{"a2"}},
	}
	if err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if err := s.SendMany(ctx, tx, msgs); err != nil {
			return err
		}
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if len(sink.list) != 0 {
			t.Errorf("%d notices pushed before the commit", len(sink.list))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	sink.mu.Lock()
	pushed := sink.list
	sink.mu.Unlock()
	if len(pushed) != len(msgs) {
		t.Fatalf("%d notices pushed, want %d", len(pushed), len(msgs))
	}
	wantUnread := []int{4, 1, 4}
	for i, n := range pushed {
		m := msgs[i]
		if n.UserID != m.UserID || n.Type != domain.NoticeNotification {
			t.Errorf("notice %d went to %s as %q, want %s as %q", i, n.UserID, n.Type, m.UserID, domain.NoticeNotification)
		}
		var got struct {
			ID          int64     `json:"id,string"`
			Type        string    `json:"type"`
			Data        note      `json:"data"`
			Read        bool      `json:"read"`
			CreatedAt   time.Time `json:"createdAt"`
			UnreadCount int       `json:"unreadCount"`
		}
		if err := json.Unmarshal(n.Data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Type != m.Type || got.Data != m.Data.(note) || got.Read || !got.CreatedAt.Equal(at) || got.UnreadCount != wantUnread[i] {
			t.Errorf("notice %d: %+v, want %s %+v unread %d", i, got, m.Type, m.Data, wantUnread[i])
		}
		var stored notify.Notification
		if err := bdb.NewSelect().Model(&stored).Where("id = ?", got.ID).Scan(ctx); err != nil {
			t.Fatalf("notification %d of notice %d: %v", got.ID, i, err)
		}
		var data note
		if err := json.Unmarshal(stored.Data, &data); err != nil {
			t.Fatal(err)
		}
		if stored.UserID != m.UserID || stored.Type != m.Type || data != m.Data.(note) || stored.Read || !stored.CreatedAt.Equal(at) {
			t.Errorf("stored notification %d: %+v, want message %d %+v", got.ID, stored, i, m)
		}
	}
	for _, c := range []struct {
		user string
		want int
	}{{a, 4}, {b, 1}} {
		if n, err := s.Unread(ctx, c.user); err != nil || n != c.want {
			t.Errorf("user %s has %d unread (%v), want %d", c.user, n, err, c.want)
		}
	}
}

// Notifications sent with reserved ids are stored with the transaction's
// queued writes under those ids, and every push of the transaction counts
// all of its user's unread, whether stored at once or queued, before or
// after the reservation.
func TestReservedNotificationsCountWithTheOthersOfTheirTransaction(t *testing.T) {
	bdb := dbtest.DB(t)
	sink := &notices{}
	s := notify.New(bdb, eventlog.New(bdb, sink), func() time.Time { return time.Now().UTC() })
	a, b := newUser(t, bdb), newUser(t, bdb)
	ctx := context.Background()
	if err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		return s.Send(ctx, tx, a, notify.Tip, note{"before"}) // a has 1 unread
	}); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	sink.list = nil
	sink.mu.Unlock()
	var reservedIDs []int64
	if err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		var reads db.Reads
		r := s.Reserve(tx, &reads, []string{a, b})
		if err := reads.Run(ctx, tx); err != nil {
			return err
		}
		// Stored at once after the counts were read: 2 for a.
		if err := s.Send(ctx, tx, a, notify.Tip, note{"stored"}); err != nil {
			return err
		}
		// Queued: 3 for a, 1 for b.
		if err := r.Send(ctx, tx, []notify.Message{{UserID: a, Type: notify.GameCompleted, Data: note{"queued a"}},
			{UserID: b, Type: notify.GameCompleted, Data: note{"queued b"}}}); err != nil {
			return err
		}
		var stored int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM notifications WHERE user_id = ?", b).Scan(&stored); err != nil || stored != 0 {
			t.Errorf("b's notification stored before the transaction's queued writes went (%d, %v)", stored, err)
		}
		// Stored at once while a's notification is queued: 4 for a.
		return s.Send(ctx, tx, a, notify.Tip, note{"after"})
	}); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	pushed := sink.list
	sink.mu.Unlock()
	var got []string
	for _, n := range pushed {
		var p struct {
			ID          int64 `json:"id,string"`
			Data        note  `json:"data"`
			UnreadCount int   `json:"unreadCount"`
		}
		if err := json.Unmarshal(n.Data, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Data.Text+":"+strconv.Itoa(p.UnreadCount))
		if strings.HasPrefix(p.Data.Text, "queued") {
			reservedIDs = append(reservedIDs, p.ID)
		}
	}
	if want := []string{"stored:2", "queued a:3", "queued b:1", "after:4"}; !slices.Equal(got, want) {
		t.Errorf("pushed %v, want %v", got, want)
	}
	for _, id := range reservedIDs {
		var n notify.Notification
		if err := bdb.NewSelect().Model(&n).Where("id = ?", id).Scan(ctx); err != nil || n.Type != notify.GameCompleted {
			t.Errorf("notification %d: %+v %v", id, n, err)
		}
	}
	if n, err := s.Unread(ctx, a); err != nil || n != 4 {
		t.Errorf("a has %d unread (%v), want 4", n, err)
	}
}
