package wager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"wager.example.com/sdk/api"
)

// recheck is how often FindOrCreateGame also asks for the current game
// while it waits to be told of a match, for a notice lost to a
// reconnect.
const recheck = 10 * time.Second

// FindOrCreateGame finds an opponent and returns the id of the game: the
// user's active game when there is one; else it queues at an open lobby
// of the game type, stake (USDC minor units per player, 0 for a free
// game) and settings (nil for any; see Settings) where someone waits, or
// at another such lobby, or at one it opens, and waits, without polling,
// until the server tells of the match (NoticeMatched). A stake is locked
// from the platform balance once matched. When ctx ends first it leaves
// the queue and returns ctx's error; it returns the API's error when a
// step is refused (409 INSUFFICIENT_FUNDS, say).
func (c *Client) FindOrCreateGame(ctx context.Context, gameType string, stakeMinor int64, settings map[string]any) (string, error) {
	if id, err := c.currentGame(ctx); err != nil || id != "" {
		return id, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	notices, err := c.Notices(ctx) // before queueing: the match is told once
	if err != nil {
		return "", err
	}
	lobby, err := c.pickLobby(ctx, gameType, stakeMinor, settings)
	if err != nil {
		return "", err
	}
	j, err := c.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobby, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == "CONFLICT" {
		// Waiting in another queue (of an earlier run): leave it, once.
		var other struct {
			LobbyID string `json:"lobbyId"`
		}
		if json.Unmarshal(ae.Body, &other) == nil && other.LobbyID != "" {
			if _, lerr := c.API.DeleteLobbiesByIdJoinQueueWithResponse(ctx, other.LobbyID, nil); lerr == nil {
				j, err = c.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobby, nil)
			}
		}
	}
	if err != nil {
		return "", err
	}
	if j.JSON200 != nil && j.JSON200.GameId != nil {
		return *j.JSON200.GameId, nil
	}
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	for {
		select {
		case n, ok := <-notices:
			if !ok {
				continue // ctx ended: the next round returns
			}
			if n.Kind != NoticeMatched {
				continue
			}
			var m api.GameMatched
			if json.Unmarshal(n.Data, &m) == nil && m.GameId != "" {
				return m.GameId, nil
			}
		case <-tick.C:
			if id, err := c.currentGame(ctx); err != nil || id != "" {
				return id, err
			}
		case <-ctx.Done():
			leave, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer done()
			c.API.DeleteLobbiesByIdJoinQueueWithResponse(leave, lobby, nil)
			if id, err := c.currentGame(leave); err == nil && id != "" {
				return id, nil // matched as the wait ended
			}
			return "", ctx.Err()
		}
	}
}

// currentGame returns the user's active game, "" when none.
func (c *Client) currentGame(ctx context.Context) (string, error) {
	r, err := c.API.GetUsersMeCurrentGameWithResponse(ctx, nil)
	if err != nil {
		return "", err
	}
	if r.JSON200 == nil {
		return "", nil
	}
	return r.JSON200.GameId, nil
}

// pickLobby returns a lobby that fits, someone waiting there first, or
// one it opens.
func (c *Client) pickLobby(ctx context.Context, gameType string, stakeMinor int64, settings map[string]any) (string, error) {
	r, err := c.API.GetLobbiesWithResponse(ctx, nil)
	if err != nil {
		return "", err
	}
	var fitting []api.GameLobby
	if r.JSON200 != nil {
		for _, l := range *r.JSON200 {
			if string(l.GameType) == gameType && l.StakeMinor == stakeMinor && l.Status == "open" && hasSettings(l.Settings, settings) {
				fitting = append(fitting, l)
			}
		}
	}
	for _, l := range fitting {
		if l.Queued > 0 {
			return l.Id, nil
		}
	}
	if len(fitting) > 0 {
		return fitting[0].Id, nil
	}
	l, err := c.API.PostLobbiesWithResponse(ctx, nil, api.LobbyRequest{GameType: api.LobbyRequestGameType(gameType), StakeMinor: stakeMinor, Settings: Settings(settings)})
	if err != nil {
		return "", err
	}
	if l.JSON201 == nil {
		return "", fmt.Errorf("wager: opening a lobby answered %d", l.StatusCode())
	}
	return l.JSON201.Id, nil
}

// hasSettings reports whether a lobby's settings have every member asked.
func hasSettings(have api.GameSettings, want map[string]any) bool {
	members := SettingsMap(have)
	for k, v := range want {
		a, _ := json.Marshal(members[k])
		b, _ := json.Marshal(v)
		if string(a) != string(b) {
			return false
		}
	}
	return true
}

// Move plays a move in a game ("rock", "paper" or "scissors" in rps;
// map[string]int{"column": 3} in connect4) and returns the server's
// answer, or the API's error (409 ALREADY_MOVED, NOT_YOUR_TURN, ...).
func (c *Client) Move(ctx context.Context, gameID string, move any) (*api.GameActResult, error) {
	m, err := MoveOf(move)
	if err != nil {
		return nil, err
	}
	r, err := c.API.PostGamesByIdActionsWithResponse(ctx, gameID, nil, api.GameAction{Type: "move", Move: m})
	if err != nil {
		return nil, err
	}
	return r.JSON200, nil
}

// MoveOf is a move ("rock", map[string]int{"column": 3}, ...) as the
// body of a move action.
func MoveOf(move any) (*api.GameMove, error) {
	raw, err := json.Marshal(move)
	if err != nil {
		return nil, fmt.Errorf("wager: encode the move %v: %w", move, err)
	}
	var m api.GameMove
	if err := m.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("wager: the move %s: %w", raw, err)
	}
	return &m, nil
}
