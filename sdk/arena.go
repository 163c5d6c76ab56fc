package wager

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"wager.example.com/sdk/api"
)

// GamePlayer plays one game to its end: PlayArena calls it with each game
// the tournament pairs the user in, and it returns once the game is over
// (nil), or with the error that stopped it. A game that is over before it
// is read (FollowGame answers GAME_NOT_ACTIVE) is over: return nil.
type GamePlayer func(ctx context.Context, gameID string) error

// PlayArena plays a tournament (an arena) to its end. It joins it
// (locking its entry fee once; a user already in stays in), follows its
// room, and hands each game the room pairs the user in to play, one at a
// time, while it goes on reading the room. When the standings show the
// user paused (after a game nobody moved in, or a withdrawal) and no game
// is being played, it joins again, without paying again. It returns the tournament as it ended: finished, with its final
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
	isPaused := false // as the latest standings show the user
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
			var standings []api.TournamentStanding
			switch p := p.(type) {
			case *api.TournamentDetail:
				standings = p.Standings
			case *api.TournamentStandings:
				standings = p.Standings
			case *api.TournamentPaired:
				if slices.ContainsFunc(p.Players, func(u api.TournamentUserRef) bool { return u.UserId == me }) {
					start(p.GameId)
				}
			}
			if i := slices.IndexFunc(standings, func(s api.TournamentStanding) bool { return s.UserId == me }); i >= 0 {
				isPaused = standings[i].Paused
				start(currentGame(standings, me))
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
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if isPaused && !playing && !over {
			// Standings do not change while the user waits paused: no
			// later event would say it again.
			isPaused = false
			if err := c.rejoin(ctx, tournamentID); err != nil {
				return nil, err
			}
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

// rejoin joins the tournament again, so that a paused user is paired
// again. A tournament whose time is up meanwhile is no error: its end
// follows.
func (c *Client) rejoin(ctx context.Context, tournamentID string) error {
	_, err := c.JoinTournament(ctx, tournamentID)
	var closed *TournamentClosedError
	if errors.As(err, &closed) && closed.Reason == TournamentOver {
		return nil
	}
	return err
}
