package app

import (
	"context"
	"encoding/json"
	"fmt"

	"wager/domain/eventlog"
	"wager/domain/tournament"
	"wager/web/live"
)

// liveFeed joins the domain to this instance's live hub: what a
// transaction publishes reaches the hub right after its commit, and the
// games count spectators from the hub's presence. The hub reads the games
// and is built after them: the feed reaches it through the App.
type liveFeed struct{ a *App }

// Published implements eventlog.Sink.
func (f liveFeed) Published(p eventlog.Published) {
	f.a.Live.Committed(p.Events)
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

// joinTournament answers a join of a tournament's room: the tournament as
// GET /tournaments/:id answers it (NOT_FOUND), as of its last event.
func joinTournament(s *tournament.Service) func(ctx context.Context, id, userID string, atLeast int) (live.Joined, error) {
	return func(ctx context.Context, id, _ string, _ int) (live.Joined, error) { // a tournament is read afresh
		d, err := s.Get(ctx, id)
		if err != nil {
			return live.Joined{}, err
		}
		raw, err := json.Marshal(d)
		if err != nil {
			return live.Joined{}, fmt.Errorf("encode tournament %s: %w", d.ID, err)
		}
		return live.Joined{State: raw, Seq: d.LastSeq}, nil
	}
}
