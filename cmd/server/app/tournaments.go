package app

import (
	"context"
	"encoding/json"
	"fmt"

	"wager/domain/game"
	"wager/domain/tournament"
	"wager/web/live"
)

// tournamentResults tells the app's tournaments of every finished game
// (game.Participant): the tournaments' service is built after the games'
// one, which it starts games with.
type tournamentResults struct{ a *App }

// ReadEnd implements game.Participant.
func (r tournamentResults) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	return r.a.Tournaments.ReadEnd(ctx, e)
}

// tournamentFeed hands the tournament events this instance commits to its
// live hub, which reads the tournaments and is built after them.
type tournamentFeed struct{ a *App }

// TournamentEvents implements tournament.Sink.
func (f tournamentFeed) TournamentEvents(evs []tournament.Event) {
	f.a.Live.TournamentCommitted(liveTournamentEvents(evs))
}

// tournamentStore reads what the hub's tournament rooms need.
type tournamentStore struct{ s *tournament.Service }

func (t tournamentStore) JoinTournament(ctx context.Context, id string) (json.RawMessage, int, error) {
	d, err := t.s.Get(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, 0, fmt.Errorf("encode tournament %s: %w", d.ID, err)
	}
	return raw, d.LastSeq, nil
}

func (t tournamentStore) TournamentEvents(ctx context.Context, id string, after, limit int) ([]live.TournamentEvent, error) {
	evs, err := t.s.EventsAfter(ctx, id, after, limit)
	return liveTournamentEvents(evs), err
}

func (t tournamentStore) TournamentSeqs(ctx context.Context, ids []string) (map[string]int, error) {
	return t.s.LastSeqs(ctx, ids)
}

func liveTournamentEvents(evs []tournament.Event) []live.TournamentEvent {
	out := make([]live.TournamentEvent, len(evs))
	for i, e := range evs {
		out[i] = live.TournamentEvent{TournamentID: e.TournamentID, Seq: e.Seq, Name: e.Name, Data: e.Data}
	}
	return out
}
