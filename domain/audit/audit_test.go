package audit_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain/audit"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// newAdmin stores a user to act as an admin and returns its id and name.
func newAdmin(t *testing.T, bdb *bun.DB) (id, username string) {
	t.Helper()
	id = uuid.NewString()
	username = "adm_" + strings.ReplaceAll(id[:8], "-", "")
	if _, err := bdb.ExecContext(t.Context(), "INSERT INTO users (id, wallet_address, username) VALUES (?, ?, ?)",
		id, "wallet-"+id, username); err != nil {
		t.Fatal(err)
	}
	return id, username
}

type flagData struct {
	Enabled bool `json:"enabled"`
}

func TestRecordWritesInTheCallersTransactionOnly(t *testing.T) {
	bdb := dbtest.DB(t)
	ctx := context.Background()
	s := audit.New(bdb)
	admin, name := newAdmin(t, bdb)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

	// An action that fails after recording takes its entry with it.
	refused := errors.New("the action failed")
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if err := audit.Record(ctx, tx, audit.Entry{ActorID: admin, Action: audit.FlagSet, Target: audit.FlagTarget("x"), At: at}); err != nil {
			return err
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("transaction: %v", err)
	}
	if got := entriesBy(t, s, admin); len(got) != 0 {
		t.Fatalf("a rolled-back action left entries: %+v", got)
	}

	// A committed one keeps it, with the actor's name as it was.
	err = db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		return audit.Record(ctx, tx, audit.Entry{ActorID: admin, Action: audit.FlagSet, Target: audit.FlagTarget("x"),
			Data: flagData{Enabled: true}, At: at})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bdb.ExecContext(ctx, "UPDATE users SET username = ? WHERE id = ?", name+"_2", admin); err != nil {
		t.Fatal(err)
	}
	got := entriesBy(t, s, admin)
	if len(got) != 1 || got[0].Actor.Username != name || got[0].Action != "flag.set" || got[0].Target != "flag:x" ||
		string(got[0].Data) != `{"enabled": true}` || !got[0].CreatedAt.Equal(at) {
		t.Fatalf("entry: %+v (data %s), want flag.set of flag:x by %s at %v", got, got[0].Data, name, at)
	}

	// Nil data is {}; data that is no object, an unknown actor, or no
	// action fails the caller's transaction.
	if err := audit.Record(ctx, bdb, audit.Entry{ActorID: admin, Action: "support.close", Target: "ticket:1"}); err != nil {
		t.Fatal(err)
	}
	if got := entriesBy(t, s, admin); len(got) != 2 || string(got[0].Data) != "{}" || got[0].CreatedAt.IsZero() {
		t.Errorf("entry without data or time: %+v", got[0])
	}
	for _, e := range []audit.Entry{
		{ActorID: admin, Action: audit.FlagSet, Target: "flag:x", Data: []int{1}},
		{ActorID: admin, Action: audit.FlagSet, Target: "flag:x", Data: "on"},
		{ActorID: uuid.NewString(), Action: audit.FlagSet, Target: "flag:x"},
		{ActorID: "not-an-id", Action: audit.FlagSet, Target: "flag:x"},
		{ActorID: admin, Target: "flag:x"},
		{ActorID: admin, Action: audit.FlagSet},
		{ActorID: admin, Action: "Flag Set", Target: "flag:x"},
	} {
		if err := audit.Record(ctx, bdb, e); err == nil {
			t.Errorf("%+v was recorded", e)
		}
	}
	if got := entriesBy(t, s, admin); len(got) != 2 {
		t.Errorf("refused entries were written: %+v", got)
	}
}

func TestTheLogIsAppendOnly(t *testing.T) {
	bdb := dbtest.DB(t)
	ctx := context.Background()
	admin, _ := newAdmin(t, bdb)
	if err := audit.Record(ctx, bdb, audit.Entry{ActorID: admin, Action: audit.SupportReply, Target: "ticket:1"}); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"UPDATE admin_audit SET action = 'flag.set'",
		"UPDATE admin_audit SET data = '{}' WHERE id = -1", // refused even when it matches nothing
		"DELETE FROM admin_audit",
		"TRUNCATE admin_audit",
	} {
		_, err := bdb.ExecContext(ctx, stmt)
		if err == nil || !strings.Contains(err.Error(), "the admin audit log is append-only") {
			t.Errorf("%s: got %v, want the log's refusal", stmt, err)
		}
	}
	if got := entriesBy(t, audit.New(bdb), admin); len(got) != 1 || got[0].Action != audit.SupportReply {
		t.Errorf("after the refused statements: %+v", got)
	}
}

func TestListPagesNewestFirst(t *testing.T) {
	bdb := dbtest.DB(t)
	ctx := context.Background()
	s := audit.New(bdb)
	admin, _ := newAdmin(t, bdb)
	for i := range 5 {
		if err := audit.Record(ctx, bdb, audit.Entry{ActorID: admin, Action: audit.SupportClose,
			Target: audit.TicketTarget(string(rune('a' + i)))}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.List(ctx, 5, 0)
	if err != nil || len(all) != 5 || all[0].Target != "ticket:e" || all[4].Target != "ticket:a" {
		t.Fatalf("newest five: %+v, %v", all, err)
	}
	var paged []audit.Item
	var before int64
	for len(paged) < 5 {
		page, err := s.List(ctx, 2, before)
		if err != nil || len(page) == 0 {
			t.Fatalf("page before %d: %+v, %v", before, page, err)
		}
		paged = append(paged, page...)
		if before, err = strconv.ParseInt(page[len(page)-1].ID, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	for i := range all {
		if paged[i].ID != all[i].ID {
			t.Fatalf("paged by 2: %+v, want %+v", paged[:5], all)
		}
	}
}

// entriesBy returns the actor's entries, newest first.
func entriesBy(t *testing.T, s *audit.Service, actor string) []audit.Item {
	t.Helper()
	all, err := s.List(context.Background(), 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Item
	for _, it := range all {
		if it.Actor.UserID == actor {
			out = append(out, it)
		}
	}
	return out
}
