package app

import (
	"context"

	"wager/domain/eventlog"
	"wager/web/live"
)

// liveFeed joins the domain to this instance's live hub: what a
// transaction publishes reaches the hub right after its commit, and the
// games count spectators from the hub's presence. The hub reads the games
// and is built after them: the feed reaches it through the App.
type liveFeed struct{ a *App }

// Published implements eventlog.Sink.
func (f liveFeed) Published(p eventlog.Published) {
	if len(p.Events) > 0 {
		f.a.Live.Committed(liveEvents(p.Events))
	}
	for _, n := range p.Notices {
		f.a.Live.Notify(n.UserID, n.Type, n.Data)
	}
}

// Spectators implements game.Live.
func (f liveFeed) Spectators(gameID string) int { return f.a.Live.Spectators(gameID) }

// TotalSpectators implements game.Live.
func (f liveFeed) TotalSpectators() int { return f.a.Live.TotalSpectators() }

// LatestSeq implements game.Live.
func (f liveFeed) LatestSeq(gameID string) (int, bool) { return f.a.Live.LatestSeq(gameID) }

// liveStore reads stored events for the hub.
type liveStore struct{ log *eventlog.Log }

func (s liveStore) Events(ctx context.Context, gameID string, after, limit int) ([]live.Event, error) {
	evs, err := s.log.Events(ctx, gameID, after, limit)
	return liveEvents(evs), err
}

func (s liveStore) LastSeqs(ctx context.Context, gameIDs []string) (map[string]int, error) {
	return s.log.LastSeqs(ctx, gameIDs)
}

func liveEvents(evs []eventlog.Event) []live.Event {
	out := make([]live.Event, len(evs))
	for i, e := range evs {
		out[i] = live.Event{GameID: e.GameID, Seq: e.Seq, Name: e.Name, Data: e.Data}
	}
	return out
}
