package wager

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"wager/sdk/api"
)

// GamePlayer plays one game to its end: PlayArena calls it with each game
// the tournament pairs the user in, and it returns once the game is over
// (nil), or with the error that stopped it. A game that is over before it
// is read (FollowGame answers GAME_NOT_ACTIVE) is over: return nil.
type GamePlayer func(ctx context.Context, gameID string) error

// PlayArena plays a tournament (an arena) to its end. It joins it
// (locking its entry fee once; a user already in stays in), follows its
// room, and hands each game the room pairs the user in to play, one at a
// time, while it goes on reading the room. After each game, a user the
// server paused (a game nobody moved in) joins again, without paying
// again. It returns the tournament as it ended: finished, with its final
// standings and prizes, or cancelled (fewer than two players at the
// start; the entry refunded).
//
// It returns the join's refusal (*TournamentClosedError,
// *InsufficientFundsError, player protection's refusals, *APIError),
// play's first error (the user then stays in the tournament and is paired
// again: WithdrawTournament to leave), the room's error, or ctx's error
// when ctx ends first.
func (c *Client) PlayArena(ctx context.Context, tournamentID string, play GamePlayer) (*api.TournamentDetail, error) {
	if _, err := c.JoinTournament(ctx, tournamentID); err != nil {
		return nil, err
	}
	me := c.UserID()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f, err := c.FollowTournament(ctx, tournamentID)
	if err != nil {
		return nil, err
	}

	events := f.Events
	results := make(chan error, 1)
	seen := map[string]bool{} // games handed to play, or queued for it
	var next []string         // games paired while another is played
	playing, over := false, false
	start := func(gameID string) {
		if gameID == "" || seen[gameID] {
			return
		}
		seen[gameID] = true
		if playing {
			next = append(next, gameID)
			return
		}
		playing = true
		go func() { results <- play(ctx, gameID) }()
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if err := f.Err(); err != nil {
					return nil, fmt.Errorf("wager: following tournament %s: %w", tournamentID, err)
				}
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				events, over = nil, true
				break
			}
			p, err := ev.Payload()
			if err != nil {
				continue // an event of a newer server
			}
			switch p := p.(type) {
			case *api.TournamentDetail:
				start(currentGame(p.Standings, me))
			case *api.TournamentStandings:
				start(currentGame(p.Standings, me))
			case *api.TournamentPaired:
				if slices.ContainsFunc(p.Players, func(u api.TournamentUserRef) bool { return u.UserId == me }) {
					start(p.GameId)
				}
			}
		case err := <-results:
			playing = false
			if err != nil {
				return nil, fmt.Errorf("wager: playing a game of tournament %s: %w", tournamentID, err)
			}
			if len(next) > 0 {
				gameID := next[0]
				next = next[1:]
				playing = true
				go func() { results <- play(ctx, gameID) }()
				continue
			}
			if !over {
				if err := c.returnIfPaused(ctx, tournamentID, me); err != nil {
					return nil, err
				}
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if over && !playing {
			return c.Tournament(ctx, tournamentID)
		}
	}
}

// currentGame returns the game the user plays in the standings, "" when
// none.
func currentGame(standings []api.TournamentStanding, userID string) string {
	for _, s := range standings {
		if s.UserId == userID && s.CurrentGameId != nil {
			return *s.CurrentGameId
		}
	}
	return ""
}

// returnIfPaused joins the tournament again when the server paused the
// user (after a game nobody moved in), so that they are paired again. A
// tournament whose time is up meanwhile is no error: its end follows.
func (c *Client) returnIfPaused(ctx context.Context, tournamentID, userID string) error {
	t, err := c.Tournament(ctx, tournamentID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(t.Standings, func(s api.TournamentStanding) bool { return s.UserId == userID })
	if i < 0 || !t.Standings[i].Paused {
		return nil
	}
	_, err = c.JoinTournament(ctx, tournamentID)
	var closed *TournamentClosedError
	if errors.As(err, &closed) && closed.Reason == TournamentOver {
		return nil
	}
	return err
}
