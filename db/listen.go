package db

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// Listener holds one dedicated pgx connection that LISTENs on a set of
// channels and calls their handlers for each notification. It reconnects
// after errors and then calls every OnConnect hook, so that subscribers can
// reload whatever they might have missed while disconnected.
//
// pgx is used rather than bun's listener because its LISTEN waits for the
// server's confirmation: a NOTIFY sent after Ready is never lost.
type Listener struct {
	url string
	log *slog.Logger

	mu        sync.Mutex
	handlers  map[string][]func(payload string)
	onConnect []func()
	ready     chan struct{}
}

// NewListener returns a Listener for the database at url; call Handle and
// OnConnect before Run.
func NewListener(url string, log *slog.Logger) *Listener {
	return &Listener{url: url, log: log, handlers: map[string][]func(string){}, ready: make(chan struct{})}
}

// Handle registers fn for notifications on channel. fn runs on the
// listener's goroutine and must not block for long.
func (l *Listener) Handle(channel string, fn func(payload string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handlers[channel] = append(l.handlers[channel], fn)
}

// OnConnect registers fn to run after every (re)connection, once LISTEN is
// in effect.
func (l *Listener) OnConnect(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onConnect = append(l.onConnect, fn)
}

// Ready is closed once the first connection listens on every channel.
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// Run listens until ctx is done, reconnecting with backoff after failures.
func (l *Listener) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := l.session(ctx, func() {
			backoff = 100 * time.Millisecond
			if first {
				first = false
				close(l.ready)
			}
		})
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("database listener disconnected; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (l *Listener) session(ctx context.Context, connected func()) error {
	conn, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	l.mu.Lock()
	channels := make([]string, 0, len(l.handlers))
	for ch := range l.handlers {
		channels = append(channels, ch)
	}
	hooks := append([]func(){}, l.onConnect...)
	l.mu.Unlock()
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	connected()
	for _, hook := range hooks {
		hook()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.mu.Lock()
		fns := l.handlers[n.Channel]
		l.mu.Unlock()
		for _, fn := range fns {
			fn(n.Payload)
		}
	}
}

// Notify sends a notification on channel. Inside a transaction it is
// delivered only when (and if) the transaction commits.
func Notify(ctx context.Context, idb bun.IDB, channel, payload string) error {
	_, err := idb.ExecContext(ctx, "SELECT pg_notify(?, ?)", channel, payload)
	return err
}
