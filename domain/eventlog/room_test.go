package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// recorder is a Sink that keeps every publication.
type recorder struct {
	mu  sync.Mutex
	got []Published
}

func (r *recorder) Published(p Published) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
}

func (r *recorder) publications() []Published {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Published(nil), r.got...)
}

// newGame stores an active game with no events and returns its id.
func newGame(t testing.TB) string {
	t.Helper()
	id := uuid.NewString()
	if _, err := dbtest.DB(t).ExecContext(context.Background(), `INSERT INTO games (id, game_type, stake_minor, settings, status, state, created_at)
		VALUES (?, 'rps', 0, '{}', 'active', '{}', now())`, id); err != nil {
		t.Fatalf("create a game: %v", err)
	}
	return id
}

func gameSeq(t testing.TB, gameID string) int {
	t.Helper()
	var seq int
	if err := dbtest.DB(t).QueryRowContext(context.Background(), "SELECT seq FROM games WHERE id = ?", gameID).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

type note struct {
	N int `json:"n"`
}

// events returns n events named name-1, name-2, ...
func events(name string, n int) []domain.Event {
	out := make([]domain.Event, n)
	for i := range out {
		out[i] = domain.Event{Name: domain.EventName(fmt.Sprintf("%s-%d", name, i+1)), Data: note{N: i + 1}}
	}
	return out
}

// appendIn appends events in a transaction of their own.
func appendIn(t testing.TB, l *Log, gameID string, es ...domain.Event) ([]Event, error) {
	t.Helper()
	var rows []Event
	err := db.Transact(context.Background(), dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
		var err error
		rows, err = l.Append(ctx, tx, domain.GameStreamOf(gameID), time.Now(), es...)
		return err
	})
	return rows, err
}

type seqName struct {
	Seq  int
	Name string
}

func seqNames(rows []Event) []seqName {
	out := make([]seqName, len(rows))
	for i, r := range rows {
		out[i] = seqName{r.Seq, string(r.Name)}
	}
	return out
}

func TestAppendNumbersEventsAfterTheGamesSeq(t *testing.T) {
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	gameID := newGame(t)

	first, err := appendIn(t, l, gameID, events("a", 2)...)
	if err != nil {
		t.Fatal(err)
	}
	second, err := appendIn(t, l, gameID, events("b", 3)...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqNames(first), []seqName{{1, "a-1"}, {2, "a-2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("first append: got %v, want %v", got, want)
	}
	if got, want := seqNames(second), []seqName{{3, "b-1"}, {4, "b-2"}, {5, "b-3"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("second append: got %v, want %v", got, want)
	}
	if got := gameSeq(t, gameID); got != 5 {
		t.Errorf("the game's seq: got %d, want 5", got)
	}
	var data note
	if err := json.Unmarshal(second[2].Data, &data); err != nil || data.N != 3 {
		t.Errorf("stored data of b-3: got %s (%v), want {\"n\":3}", second[2].Data, err)
	}

	// Each committed transaction is one publication, in commit order, with
	// the stored rows.
	pubs := sink.publications()
	if len(pubs) != 2 {
		t.Fatalf("publications: got %d, want 2", len(pubs))
	}
	if got, want := seqNames(pubs[0].Events), seqNames(first); !reflect.DeepEqual(got, want) {
		t.Errorf("first publication: got %v, want %v", got, want)
	}
	if got, want := seqNames(pubs[1].Events), seqNames(second); !reflect.DeepEqual(got, want) {
		t.Errorf("second publication: got %v, want %v", got, want)
	}
	for _, p := range pubs {
		for _, e := range p.Events {
			if e.Stream.ID != gameID {
				t.Errorf("published event %d names game %s, want %s", e.Seq, e.Stream.ID, gameID)
			}
		}
	}
}

func TestAppendPublishesOnlyAfterCommit(t *testing.T) {
	ctx := context.Background()
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	gameID := newGame(t)
	userID := uuid.NewString()

	var seenInside int
	err := db.Transact(ctx, dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
		if _, err := l.Append(ctx, tx, domain.GameStreamOf(gameID), time.Now(), events("e", 2)...); err != nil {
			return err
		}
		if err := l.Tell(tx, userID, "hello", note{N: 7}); err != nil {
			return err
		}
		seenInside = len(sink.publications())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seenInside != 0 {
		t.Errorf("publications before the commit: got %d, want 0", seenInside)
	}
	pubs := sink.publications()
	if len(pubs) != 2 {
		t.Fatalf("publications after the commit: got %d, want 2 (the events, then the notice)", len(pubs))
	}
	if got := seqNames(pubs[0].Events); !reflect.DeepEqual(got, []seqName{{1, "e-1"}, {2, "e-2"}}) {
		t.Errorf("published events: got %v", got)
	}
	if n := pubs[1].Notices; len(n) != 1 || n[0].UserID != userID || n[0].Type != "hello" || string(n[0].Data) != `{"n":7}` {
		t.Errorf("published notice: got %+v, want one hello to %s with {\"n\":7}", n, userID)
	}

	// A transaction that rolls back publishes nothing and leaves no event.
	errRollback := errors.New("changed my mind")
	err = db.Transact(ctx, dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
		if _, err := l.Append(ctx, tx, domain.GameStreamOf(gameID), time.Now(), events("lost", 3)...); err != nil {
			return err
		}
		if err := l.Tell(tx, userID, "lost", note{}); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("rolled-back transaction: got %v, want %v", err, errRollback)
	}
	if got := len(sink.publications()); got != 2 {
		t.Errorf("publications after a rollback: got %d, want still 2", got)
	}
	if got := gameSeq(t, gameID); got != 2 {
		t.Errorf("the game's seq after a rollback: got %d, want 2", got)
	}
	stored, err := l.Events(ctx, domain.GameStreamOf(gameID), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqNames(stored); !reflect.DeepEqual(got, []seqName{{1, "e-1"}, {2, "e-2"}}) {
		t.Errorf("stored events after a rollback: got %v", got)
	}
}

// Publishing needs a commit to wait for: a db.Tx made by hand around a
// transaction that is not db.Transact's has none, and Append refuses
// rather than publish early or never.
func TestAppendNeedsATransactionThatPublishes(t *testing.T) {
	ctx := context.Background()
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	gameID := newGame(t)
	err := dbtest.DB(t).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := l.Append(ctx, db.Tx{Tx: tx}, domain.GameStreamOf(gameID), time.Now(), events("e", 1)...)
		return err
	})
	if !errors.Is(err, db.ErrNoTransaction) {
		t.Errorf("Append in a plain transaction: got %v, want db.ErrNoTransaction", err)
	}
	if got := gameSeq(t, gameID); got != 0 {
		t.Errorf("the game's seq: got %d, want 0", got)
	}
	if got := len(sink.publications()); got != 0 {
		t.Errorf("publications: got %d, want 0", got)
	}
}

func TestAppendToAnUnknownGame(t *testing.T) {
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	rows, err := appendIn(t, l, uuid.NewString(), events("e", 2)...)
	if !errors.Is(err, ErrNoRoom) {
		t.Errorf("Append to an unknown game: got rows %v, err %v; want ErrNoRoom", rows, err)
	}
	if got := len(sink.publications()); got != 0 {
		t.Errorf("publications: got %d, want 0", got)
	}
}

func TestAppendNothing(t *testing.T) {
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	gameID := newGame(t)
	rows, err := appendIn(t, l, gameID)
	if err != nil || len(rows) != 0 {
		t.Errorf("Append of no events: got %v, %v; want none, nil", rows, err)
	}
	if got := gameSeq(t, gameID); got != 0 {
		t.Errorf("the game's seq: got %d, want 0", got)
	}
	if got := len(sink.publications()); got != 0 {
		t.Errorf("publications: got %d, want 0", got)
	}
}

// Two transactions appending to one room at once never share a seq: the
// numbering follows the game's row lock.
func TestConcurrentAppendsGetDistinctSeqs(t *testing.T) {
	ctx := context.Background()
	l := New(dbtest.DB(t), &recorder{})
	gameID := newGame(t)
	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := appendIn(t, l, gameID, events(fmt.Sprintf("w%d", w), each)...)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	stored, err := l.Events(ctx, domain.GameStreamOf(gameID), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != writers*each {
		t.Fatalf("stored events: got %d, want %d", len(stored), writers*each)
	}
	for i, e := range stored {
		if e.Seq != i+1 {
			t.Fatalf("event %d has seq %d, want %d (no gaps, no repeats)", i, e.Seq, i+1)
		}
	}
	// One transaction's events stay together and in their order.
	for i := 0; i < len(stored); i += each {
		var writer int
		fmt.Sscanf(string(stored[i].Name), "w%d-", &writer)
		for j := range each {
			if want := fmt.Sprintf("w%d-%d", writer, j+1); string(stored[i+j].Name) != want {
				t.Errorf("seq %d: got %s, want %s", stored[i+j].Seq, stored[i+j].Name, want)
			}
		}
	}
}

func TestEventsPages(t *testing.T) {
	ctx := context.Background()
	l := New(dbtest.DB(t), &recorder{})
	gameID, other := newGame(t), newGame(t)
	if _, err := appendIn(t, l, gameID, events("e", 7)...); err != nil {
		t.Fatal(err)
	}
	if _, err := appendIn(t, l, other, events("other", 2)...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after, limit int
		want         []int
	}{
		{0, 3, []int{1, 2, 3}},
		{3, 3, []int{4, 5, 6}},
		{6, 3, []int{7}},
		{7, 3, []int{}},
		{0, 100, []int{1, 2, 3, 4, 5, 6, 7}},
		{5, 1, []int{6}},
		{100, 10, []int{}},
	} {
		got, err := l.Events(ctx, domain.GameStreamOf(gameID), tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		seqs := []int{}
		for _, e := range got {
			seqs = append(seqs, e.Seq)
			if e.Stream.ID != gameID {
				t.Errorf("Events(after %d, limit %d) returned an event of game %s", tc.after, tc.limit, e.Stream.ID)
			}
			if want := fmt.Sprintf("e-%d", e.Seq); string(e.Name) != want {
				t.Errorf("event %d: got name %s, want %s", e.Seq, e.Name, want)
			}
		}
		if !reflect.DeepEqual(seqs, tc.want) {
			t.Errorf("Events(after %d, limit %d): got seqs %v, want %v", tc.after, tc.limit, seqs, tc.want)
		}
		if got == nil {
			t.Errorf("Events(after %d, limit %d): got nil, want an empty list", tc.after, tc.limit)
		}
	}
}

func TestLastSeqs(t *testing.T) {
	ctx := context.Background()
	l := New(dbtest.DB(t), &recorder{})
	a, b, quiet := newGame(t), newGame(t), newGame(t)
	if _, err := appendIn(t, l, a, events("a", 4)...); err != nil {
		t.Fatal(err)
	}
	if _, err := appendIn(t, l, b, events("b", 1)...); err != nil {
		t.Fatal(err)
	}
	unknown := uuid.NewString()
	got, err := l.LastSeqs(ctx, domain.GameStream, []string{a, b, quiet, unknown})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{a: 4, b: 1, quiet: 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("LastSeqs: got %v, want %v (an unknown game absent)", got, want)
	}
	none, err := l.LastSeqs(ctx, domain.GameStream, nil)
	if err != nil || len(none) != 0 {
		t.Errorf("LastSeqs of no games: got %v, %v; want an empty map", none, err)
	}
}

// newTournament stores a tournament (and the user who created it) with
// the same id as a game, if given one.
func newTournament(t testing.TB, id string) string {
	t.Helper()
	user := uuid.NewString()
	bdb := dbtest.DB(t)
	if _, err := bdb.ExecContext(context.Background(), "INSERT INTO users (id, wallet_address, username) VALUES (?, ?, ?)",
		user, "w"+user[:8], "u"+user[:8]); err != nil {
		t.Fatalf("create a user: %v", err)
	}
	if _, err := bdb.ExecContext(context.Background(), `INSERT INTO tournaments (id, name, game_type, settings, entry_fee_minor,
		prize_split_bps, starts_at, ends_at, max_players, status, created_by, created_at, changed_at)
		VALUES (?, 'arena', 'rps', '{}', 0, '{10000}', now(), now() + interval '1 hour', 8, 'scheduled', ?, now(), now())`, id, user); err != nil {
		t.Fatalf("create a tournament: %v", err)
	}
	return id
}

// A tournament's room is a stream of its own: its events are numbered
// from its own seq, read and published with its kind, and a game that
// happens to have the same id keeps its own numbering.
func TestATournamentsStreamIsNumberedApartFromAGamesOfTheSameID(t *testing.T) {
	ctx := context.Background()
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	id := newGame(t)
	newTournament(t, id)
	game, tour := domain.GameStreamOf(id), domain.TournamentStreamOf(id)
	appendTo := func(s domain.Stream, n int) {
		t.Helper()
		if err := db.Transact(ctx, dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
			_, err := l.Append(ctx, tx, s, time.Now(), events(s.Kind.String(), n)...)
			return err
		}); err != nil {
			t.Fatalf("append to %s: %v", s, err)
		}
	}
	appendTo(game, 2)
	appendTo(tour, 3)
	appendTo(game, 1)

	for _, c := range []struct {
		s    domain.Stream
		want int
	}{{game, 3}, {tour, 3}} {
		evs, err := l.Events(ctx, c.s, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != c.want {
			t.Fatalf("%s has %d events, want %d", c.s, len(evs), c.want)
		}
		for i, e := range evs {
			if e.Seq != i+1 || e.Stream != c.s {
				t.Errorf("%s event %d: seq %d of %s, want seq %d of its own stream", c.s, i, e.Seq, e.Stream, i+1)
			}
		}
	}
	seqs, err := l.LastSeqs(ctx, domain.TournamentStream, []string{id, uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{id: 3}; !reflect.DeepEqual(seqs, want) {
		t.Errorf("the tournaments' last seqs: %v, want %v", seqs, want)
	}
	var tournaments int
	for _, p := range sink.publications() {
		for _, e := range p.Events {
			if e.Stream == tour {
				tournaments++
			}
		}
	}
	if tournaments != 3 {
		t.Errorf("%d of the tournament's events were published, want 3", tournaments)
	}
}
