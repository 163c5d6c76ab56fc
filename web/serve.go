package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ShutdownGrace is how long requests in flight get to finish after a stop
// signal; the whole stop stays under 10 seconds.
const ShutdownGrace = 8 * time.Second

// Serve serves srv on ln until ctx is done, then stops accepting, lets
// requests in flight finish for up to ShutdownGrace and closes whatever is
// left. It returns the serve error, or nil after a clean stop.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		log.Warn("requests still running at the end of the grace period; closing them", "err", err)
		srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
