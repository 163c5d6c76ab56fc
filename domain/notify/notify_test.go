package notify_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain/notify"
	"wager/domain/room"
)

// notices keeps what the room log publishes.
type notices struct {
	mu   sync.Mutex
	list []room.Notice
}

func (n *notices) Published(p room.Published) {
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
	s := notify.New(bdb, room.New(bdb, sink), func() time.Time { return at })
	a, b := newUser(t, bdb), newUser(t, bdb)
	ctx := context.Background()
	// a has two unread notifications and one read one before.
	if err := db.Transact(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
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
	if err := db.Transact(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
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
		if n.UserID != m.UserID || n.Type != notify.Notice {
			t.Errorf("notice %d went to %s as %q, want %s as %q", i, n.UserID, n.Type, m.UserID, notify.Notice)
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
