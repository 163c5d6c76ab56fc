package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
)

// A NOTIFY payload must stay under PostgreSQL's 8000 bytes; the announcer
// keeps its payloads under maxPayload (7800).
func TestPayloadsSplitALargeBatchAndKeepEverything(t *testing.T) {
	a := NewAnnouncer(nil, "0123456789abcdef", nil, nil, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		name                        string
		games, tournaments, notices int
		noticeBytes                 int
		wantOnePayload              bool
		wantAtLeastMany             int
	}{
		{"nothing", 0, 0, 0, 0, false, 0},
		{"one game", 1, 0, 0, 0, true, 1},
		{"one tournament", 0, 1, 0, 0, true, 1},
		{"a few of each", 5, 2, 3, 50, true, 1},
		{"a thousand games", 1000, 0, 0, 0, false, 6},
		{"a thousand tournaments", 0, 1000, 0, 0, false, 6},
		{"a thousand notices", 0, 0, 1000, 200, false, 25},
		{"all, with notices near the limit", 600, 300, 40, 3000, false, 22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			games, tournaments := map[string]int{}, map[string]int{}
			for i := range tc.games {
				games[uuid.NewString()] = i + 1
			}
			for i := range tc.tournaments {
				tournaments[uuid.NewString()] = i + 1
			}
			var notices []Notice
			for i := range tc.notices {
				data, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", tc.noticeBytes), "i": fmt.Sprint(i)})
				notices = append(notices, Notice{UserID: uuid.NewString(), Type: "test", Data: data})
			}
			seqs := map[domain.Stream]int{}
			for id, seq := range games {
				seqs[domain.GameStreamOf(id)] = seq
			}
			for id, seq := range tournaments {
				seqs[domain.TournamentStreamOf(id)] = seq
			}
			payloads := a.payloads(seqs, notices)
			if tc.games == 0 && tc.tournaments == 0 && tc.notices == 0 {
				if len(payloads) != 0 {
					t.Errorf("payloads of an empty batch: got %d, want 0", len(payloads))
				}
				return
			}
			if tc.wantOnePayload && len(payloads) != 1 {
				t.Errorf("payloads: got %d, want 1", len(payloads))
			}
			if len(payloads) < tc.wantAtLeastMany {
				t.Errorf("payloads: got %d, want at least %d", len(payloads), tc.wantAtLeastMany)
			}
			gotGames, gotTournaments := map[string]int{}, map[string]int{}
			var gotNotices []Notice
			for i, p := range payloads {
				if len(p) > maxPayload {
					t.Errorf("payload %d is %d bytes, over the limit of %d", i, len(p), maxPayload)
				}
				an, err := ParseAnnouncement(p)
				if err != nil {
					t.Fatalf("payload %d: %v", i, err)
				}
				if an.Instance != a.Instance() {
					t.Errorf("payload %d names instance %q, want %q", i, an.Instance, a.Instance())
				}
				if len(an.Games) == 0 && len(an.Tournaments) == 0 && len(an.Notices) == 0 {
					t.Errorf("payload %d announces nothing", i)
				}
				for id, seq := range an.Tournaments {
					if _, dup := gotTournaments[id]; dup {
						t.Errorf("tournament %s announced twice", id)
					}
					gotTournaments[id] = seq
				}
				for id, seq := range an.Games {
					if _, dup := gotGames[id]; dup {
						t.Errorf("game %s announced twice", id)
					}
					gotGames[id] = seq
				}
				gotNotices = append(gotNotices, an.Notices...)
			}
			if !reflect.DeepEqual(gotGames, games) && !(len(games) == 0 && len(gotGames) == 0) {
				t.Errorf("games announced: got %d, want %d (every game with its seq)", len(gotGames), len(games))
			}
			if !reflect.DeepEqual(gotTournaments, tournaments) {
				t.Errorf("tournaments announced: got %d, want %d (every tournament with its seq)", len(gotTournaments), len(tournaments))
			}
			if len(gotNotices) != len(notices) {
				t.Fatalf("notices announced: got %d, want %d", len(gotNotices), len(notices))
			}
			for i := range notices {
				if gotNotices[i].UserID != notices[i].UserID || string(gotNotices[i].Data) != string(notices[i].Data) {
					t.Errorf("notice %d: got %+v, want %+v (in order)", i, gotNotices[i], notices[i])
					break
				}
			}
		})
	}
}

func TestPayloadsDropOnlyANoticeThatFitsNoPayload(t *testing.T) {
	a := NewAnnouncer(nil, "0123456789abcdef", nil, nil, slog.New(slog.DiscardHandler))
	huge, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", maxPayload)})
	small := json.RawMessage(`{"ok":true}`)
	payloads := a.payloads(map[domain.Stream]int{domain.GameStreamOf("g"): 3}, []Notice{
		{UserID: "before", Type: "t", Data: small}, {UserID: "huge", Type: "t", Data: huge}, {UserID: "after", Type: "t", Data: small}})
	var users []string
	for _, p := range payloads {
		if len(p) > maxPayload {
			t.Errorf("payload of %d bytes, over %d", len(p), maxPayload)
		}
		an, err := ParseAnnouncement(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range an.Notices {
			users = append(users, n.UserID)
		}
	}
	if want := []string{"before", "after"}; !reflect.DeepEqual(users, want) {
		t.Errorf("notices announced: got %v, want %v", users, want)
	}
}

// Between two announcements a game or a tournament is announced once,
// with its newest seq, whatever order the commits published in.
func TestAnnouncerKeepsEachGamesNewestSeq(t *testing.T) {
	a := NewAnnouncer(nil, "i1", nil, nil, slog.New(slog.DiscardHandler))
	a.Published(Published{Events: []Event{{Stream: domain.GameStreamOf("g1"), Seq: 4}, {Stream: domain.GameStreamOf("g1"), Seq: 5}}})
	a.Published(Published{Events: []Event{{Stream: domain.GameStreamOf("g2"), Seq: 1}}})
	a.Published(Published{Events: []Event{{Stream: domain.GameStreamOf("g1"), Seq: 3}}}) // an older commit's, delivered late
	a.Published(Published{Notices: []Notice{{UserID: "u", Type: "t", Data: json.RawMessage(`1`)}}})
	a.Published(Published{Events: []Event{{Stream: domain.TournamentStreamOf("t1"), Seq: 7}}})
	a.Published(Published{Events: []Event{{Stream: domain.TournamentStreamOf("t1"), Seq: 6}}}) // an older commit's, delivered late
	a.Published(Published{Events: []Event{{Stream: domain.TournamentStreamOf("t2"), Seq: 1}}})
	a.Published(Published{Events: []Event{{Stream: domain.TournamentStreamOf("g1"), Seq: 1}}}) // not the game g1
	a.mu.Lock()
	seqs, notices := a.seqs, a.notices
	a.mu.Unlock()
	want := map[domain.Stream]int{domain.GameStreamOf("g1"): 5, domain.GameStreamOf("g2"): 1,
		domain.TournamentStreamOf("t1"): 7, domain.TournamentStreamOf("t2"): 1, domain.TournamentStreamOf("g1"): 1}
	if !reflect.DeepEqual(seqs, want) {
		t.Errorf("queued rooms: got %v, want %v", seqs, want)
	}
	if len(notices) != 1 {
		t.Errorf("queued notices: got %d, want 1", len(notices))
	}
}

// listen returns the announcements of instance that reach a listener of
// Channel, in the order they were sent.
func listen(ctx context.Context, t *testing.T, instance string) <-chan Announcement {
	t.Helper()
	received := make(chan Announcement, 16)
	listener := db.NewListener(dbtest.URL(t), slog.New(slog.DiscardHandler))
	listener.Handle(Channel, func(payload string) {
		an, err := ParseAnnouncement(payload)
		if err != nil {
			t.Error(err)
			return
		}
		if an.Instance == instance {
			received <- an
		}
	})
	listening := make(chan struct{})
	go func() { defer close(listening); listener.Run(ctx) }()
	t.Cleanup(func() { <-listening })
	select {
	case <-listener.Ready():
	case <-ctx.Done():
		t.Fatal("the listener did not start")
	}
	return received
}

// publishGame publishes a new game's first event and waits until a has
// taken it (sent or dropped).
func publishGame(ctx context.Context, t *testing.T, a *Announcer) string {
	t.Helper()
	id := uuid.NewString()
	a.Published(Published{Events: []Event{{Stream: domain.GameStreamOf(id), Seq: 1}}})
	for {
		a.mu.Lock()
		_, waiting := a.seqs[domain.GameStreamOf(id)]
		a.mu.Unlock()
		if !waiting {
			return id
		}
		select {
		case <-ctx.Done():
			t.Fatal("the announcer did not take the game")
		case <-time.After(time.Millisecond):
		}
	}
}

// runAnnouncer runs a until the test ends.
func runAnnouncer(ctx context.Context, t *testing.T, a *Announcer) {
	ctx, cancel := context.WithCancel(ctx)
	running := make(chan struct{})
	go func() { defer close(running); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-running })
}

// What an instance publishes, and its tournaments' news, reach every
// listener of Channel, tagged with the instance.
func TestAnnouncerNotifiesListeners(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := NewAnnouncer(dbtest.DB(t), "instance-"+uuid.NewString()[:8], NewPresence(dbtest.DB(t), domain.SystemClock),
		domain.SystemClock, slog.New(slog.DiscardHandler))
	received := listen(ctx, t, a.Instance())
	runAnnouncer(ctx, t, a)
	a.Heard(Announcement{Instance: "another"})
	gameID, userID, tournamentID := uuid.NewString(), uuid.NewString(), uuid.NewString()
	a.Published(Published{Events: []Event{{Stream: domain.GameStreamOf(gameID), Seq: 9}}})
	a.Published(Published{Events: []Event{{Stream: domain.TournamentStreamOf(tournamentID), Seq: 4}}})
	a.Published(Published{Notices: []Notice{{UserID: userID, Type: "hello", Data: json.RawMessage(`{}`)}}})

	gotGame, gotNotice, gotTournament := false, false, false
	for !gotGame || !gotNotice || !gotTournament {
		select {
		case an := <-received:
			if seq, ok := an.Games[gameID]; ok {
				if seq != 9 {
					t.Errorf("announced seq of the game: got %d, want 9", seq)
				}
				gotGame = true
			}
			if seq, ok := an.Tournaments[tournamentID]; ok {
				if seq != 4 {
					t.Errorf("announced seq of the tournament: got %d, want 4", seq)
				}
				gotTournament = true
			}
			for _, n := range an.Notices {
				if n.UserID == userID && n.Type == "hello" {
					gotNotice = true
				}
			}
		case <-ctx.Done():
			t.Fatalf("announcement not received: game %v, notice %v, tournament %v", gotGame, gotNotice, gotTournament)
		}
	}
}

// An instance alone announces nothing: nobody would read it. It announces
// as soon as another instance's presence row is fresh, or another
// instance is heard (a hello is answered at once), and stops again once
// the others have been silent for othersWindow.
func TestAnnouncerTellsOnlyWhileAnotherInstanceIsUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A clock of its own, at which every presence row already written is
	// long stale.
	var latest time.Time
	if err := dbtest.DB(t).QueryRowContext(ctx, "SELECT coalesce(max(updated_at), now()) FROM instance_presence").Scan(&latest); err != nil {
		t.Fatal(err)
	}
	c := newClock(latest.Add(time.Hour))
	presence := NewPresence(dbtest.DB(t), c.now)
	a := NewAnnouncer(dbtest.DB(t), "alone-"+uuid.NewString()[:8], presence, c.now, slog.New(slog.DiscardHandler))
	received := listen(ctx, t, a.Instance())
	runAnnouncer(ctx, t, a)
	// Its own presence row does not count as another instance.
	if err := presence.Publish(ctx, a.Instance(), nil); err != nil {
		t.Fatal(err)
	}

	publish := func() string { t.Helper(); return publishGame(ctx, t, a) }
	next := func(step string) Announcement {
		t.Helper()
		select {
		case an := <-received:
			return an
		case <-ctx.Done():
			t.Fatalf("%s: no announcement", step)
			return Announcement{}
		}
	}
	expect := func(step, game string) {
		t.Helper()
		an := next(step)
		if len(an.Games) != 1 || an.Games[game] != 1 {
			t.Fatalf("%s: the first announcement since is of games %v, want only %s", step, an.Games, game)
		}
	}

	publish() // alone

	// Another instance's presence row: announced once the recheck is due.
	other := "other-" + uuid.NewString()[:8]
	if err := presence.Publish(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	c.advance(othersRecheck)
	expect("another instance's presence row", publish())

	// The other instance stops: once its row and what was heard of it are
	// older than othersWindow, this one is alone again.
	c.advance(othersWindow + othersRecheck)
	publish()

	// A new instance says hello: it is answered at once, and told the
	// next news.
	a.Heard(Announcement{Instance: "new-" + uuid.NewString()[:8], Hello: true})
	if an := next("a hello"); an.Hello || len(an.Games)+len(an.Tournaments)+len(an.Notices) != 0 {
		t.Fatalf("the answer to a hello: got %+v, want a bare announcement", an)
	}
	expect("a hello heard", publish())

	// Its own hellos and announcements, heard back, are nobody else's.
	c.advance(othersWindow + othersRecheck)
	a.Heard(Announcement{Instance: a.Instance(), Hello: true})
	publish()
	a.Heard(Announcement{Instance: "last-" + uuid.NewString()[:8]})
	expect("another instance heard", publish())
	select {
	case an := <-received:
		t.Fatalf("announced while alone: %+v", an)
	default:
	}
}

// instances answers OthersUp as told and counts the calls.
type instances struct {
	up    bool
	err   error
	calls atomic.Int32
}

func (i *instances) OthersUp(context.Context, string, time.Duration) (bool, error) {
	i.calls.Add(1)
	return i.up, i.err
}

// Alone, an instance looks for others at most once per othersRecheck,
// however much it has to tell (looking on every batch would cost what not
// announcing saves), and at once when its clock went back.
func TestAnnouncerAloneLooksForOthersOncePerRecheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newClock(time.Date(2031, 5, 1, 12, 0, 0, 0, time.UTC))
	others := &instances{}
	a := NewAnnouncer(nil, "alone", others, c.now, slog.New(slog.DiscardHandler)) // alone, it never writes
	runAnnouncer(ctx, t, a)
	looks := func(step string, want int32) {
		t.Helper()
		if got := others.calls.Load(); got != want {
			t.Errorf("%s: looked for others %d times, want %d", step, got, want)
		}
	}
	for range 5 {
		publishGame(ctx, t, a)
	}
	looks("five batches in the same second", 1)
	c.advance(othersRecheck - time.Millisecond)
	publishGame(ctx, t, a)
	looks("just under a second later", 1)
	c.advance(time.Millisecond)
	publishGame(ctx, t, a)
	looks("a second later", 2)
	c.advance(-time.Hour)
	publishGame(ctx, t, a)
	looks("after the clock went back", 3)
}

// When it cannot tell whether others are up, an instance announces: a
// notification too many costs little.
func TestAnnouncerAnnouncesWhenItCannotLookForOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := NewAnnouncer(dbtest.DB(t), "unsure-"+uuid.NewString()[:8], &instances{err: errors.New("the database is away")},
		domain.SystemClock, slog.New(slog.DiscardHandler))
	received := listen(ctx, t, a.Instance())
	runAnnouncer(ctx, t, a)
	game := publishGame(ctx, t, a)
	select {
	case an := <-received:
		if an.Games[game] != 1 {
			t.Fatalf("announced %+v, want game %s", an, game)
		}
	case <-ctx.Done():
		t.Fatal("nothing announced")
	}
}
