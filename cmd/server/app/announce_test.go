package app_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain/eventlog"
)

// An instance says hello once it listens, before it serves, and answers
// another instance's hello: so instances that announce only while another
// is up learn of each other at once.
func TestAnInstanceSaysHelloAndAnswersAnother(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := dbtest.Fresh(t)
	received := make(chan eventlog.Announcement, 16)
	listener := db.NewListener(url, slog.New(slog.DiscardHandler))
	listener.Handle(eventlog.Channel, func(payload string) {
		if an, err := eventlog.ParseAnnouncement(payload); err == nil {
			received <- an
		}
	})
	listening := make(chan struct{})
	go func() { defer close(listening); listener.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-listening })
	select {
	case <-listener.Ready():
	case <-ctx.Done():
		t.Fatal("the listener did not start")
	}
	next := func(step string, of func(eventlog.Announcement) bool) eventlog.Announcement {
		t.Helper()
		for {
			select {
			case an := <-received:
				if of(an) {
					return an
				}
			case <-ctx.Done():
				t.Fatalf("%s: no announcement", step)
			}
		}
	}

	a, _, _ := startApp(t, map[string]string{"DATABASE_URL": url})
	hello := next("the instance started", func(eventlog.Announcement) bool { return true })
	if !hello.Hello || hello.Instance == "" {
		t.Fatalf("the first announcement of a new instance: got %+v, want a hello", hello)
	}

	if err := db.Notify(ctx, a.DB, eventlog.Channel, `{"i":"another-instance","h":true}`); err != nil {
		t.Fatal(err)
	}
	answer := next("another instance said hello", func(an eventlog.Announcement) bool { return an.Instance == hello.Instance })
	if answer.Hello {
		t.Errorf("the answer to a hello: got %+v, want a plain announcement", answer)
	}
}
