package game

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"wager/domain"
	"wager/domain/game/rules"
)

// SpectatorDelay is how late the spectators of g receive its events: the
// configured delay for an active staked Connect Four game (a game of
// position, where a watcher could help a player for money), 0 for any
// other. Players are never delayed; chat, donations and the pot reach
// everyone at once (see web/live).
func (s *Service) SpectatorDelay(g Game) time.Duration {
	return s.SpectatorDelayOf(Meta{GameType: g.GameType, StakeMinor: g.StakeMinor, Status: g.Status})
}

// SpectatorDelayOf is SpectatorDelay of a game's metadata.
func (s *Service) SpectatorDelayOf(m Meta) time.Duration {
	if m.GameType != "connect4" || m.StakeMinor <= 0 || m.Status != StatusActive {
		return 0
	}
	return s.spectatorDelay
}

// SpectatorState is the public view of an active game as a spectator may
// see it now: for a game with a spectator delay, the game as its events
// up to the last one at least the delay old leave it (the view's seq is
// that event's), else PublicState's. GAME_NOT_ACTIVE when the game is not
// active.
func (s *Service) SpectatorState(ctx context.Context, g Game) (rules.View, error) {
	view, err := s.ActiveState(g)
	delay := s.SpectatorDelay(g)
	if err != nil || delay == 0 {
		return view, err
	}
	now := s.now()
	evs, err := s.events.Events(ctx, domain.GameStreamOf(g.ID), 0, g.Seq)
	if err != nil {
		return nil, fmt.Errorf("read the events of game %s for its spectators: %w", g.ID, err)
	}
	r, err := rulesOf(g.GameType)
	if err != nil {
		return nil, err
	}
	st, _, err := r.Start(g.ID, g.Players, g.Settings, g.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("game %s: start it again for its spectators: %w", g.ID, err)
	}
	view = st.Public(g.CreatedAt)
	seq := 0
	for _, e := range domain.Due(evs, now, delay) {
		if e.Name == domain.EventGameResumed {
			var d Resumed
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return nil, fmt.Errorf("game %s: %s at seq %d: %w", g.ID, e.Name, e.Seq, err)
			}
			view.Base().SetDeadline(d.Deadline)
		} else if err := view.Apply(e.Name, e.Data); err != nil {
			return nil, fmt.Errorf("game %s: follow its events for its spectators: %w", g.ID, err)
		}
		seq = e.Seq
	}
	b := view.Base()
	b.ViewHeader = rules.ViewHeader{GameID: g.ID, GameType: g.GameType, Status: g.Status, Seq: seq}
	b.Timer.RemainingMs = 0
	if b.Timer.Deadline != nil {
		if d, err := time.Parse(time.RFC3339Nano, *b.Timer.Deadline); err == nil && d.After(now) {
			b.Timer.RemainingMs = d.Sub(now).Milliseconds()
		}
	}
	return view, nil
}

// StateFor is the state of an active game as userID may see it now: its
// public state for a player, SpectatorState for anyone else. NOT_FOUND,
// GAME_NOT_ACTIVE.
func (s *Service) StateFor(ctx context.Context, id, userID string) (rules.View, error) {
	g, err := s.Game(ctx, id)
	if err != nil {
		return nil, err
	}
	if slices.Contains(g.Players, userID) {
		return s.ActiveState(g)
	}
	return s.SpectatorState(ctx, g)
}

// EventsFor returns the first of a game's events (consecutive, in seq
// order) that userID may see now: all of them for a player, those at
// least the spectator delay old for anyone else.
func (s *Service) EventsFor(g Game, userID string, evs []domain.StreamEvent) []domain.StreamEvent {
	delay := s.SpectatorDelay(g)
	if delay == 0 || slices.Contains(g.Players, userID) {
		return evs
	}
	return domain.Due(evs, s.now(), delay)
}
