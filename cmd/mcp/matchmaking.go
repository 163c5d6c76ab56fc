package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
)

type findGameInput struct {
	GameType    string         `json:"gameType,omitempty" jsonschema:"the game type, e.g. rps (rock-paper-scissors, the default) or connect4"`
	StakeMinor  int64          `json:"stakeMinor,omitempty" jsonschema:"stake per player in USDC minor units (1 USDC = 1000000); 0, the default, for a free game"`
	Settings    map[string]any `json:"settings,omitempty" jsonschema:"only lobbies with these settings, and a new lobby gets them; rps: {rounds: odd 1-9 (3), roundSeconds: 3-120 (20)}"`
	WaitSeconds int            `json:"waitSeconds,omitempty" jsonschema:"how long to wait for an opponent when queued, 0-60 (default 0: answer at once)"`
}

type findGameOutput struct {
	Status       string `json:"status" jsonschema:"matched: the game has started, play it (gameId); queued: waiting for an opponent in lobbyId's queue"`
	GameID       string `json:"gameId,omitempty" jsonschema:"the game, once matched"`
	LobbyID      string `json:"lobbyId,omitempty" jsonschema:"the lobby whose queue you are in"`
	GameType     string `json:"gameType"`
	StakeMinor   int64  `json:"stakeMinor"`
	CreatedLobby bool   `json:"createdLobby" jsonschema:"a new lobby was opened"`
	Message      string `json:"message" jsonschema:"what to do next"`
}

// pollEvery is how often find_or_create_game looks for its match while
// it waits.
const pollEvery = 250 * time.Millisecond

// findOrCreateGame matches the user with an opponent through the lobbies'
// queues. Two agents asking for the same game type and stake meet: a
// lobby where someone waits is joined first; otherwise the user waits at
// a lobby of that kind, opened when there is none. Every call leaves the
// queue of the call before and joins again, so two agents waiting at two
// lobbies of the same kind meet at the next call of either.
func (s *server) findOrCreateGame(ctx context.Context, _ *mcp.CallToolRequest, in findGameInput) (*mcp.CallToolResult, findGameOutput, error) {
	if err := s.needWallet(); err != nil {
		return nil, findGameOutput{}, err
	}
	if in.GameType == "" {
		in.GameType = "rps"
	}
	if in.StakeMinor < 0 {
		return nil, findGameOutput{}, errors.New("VALIDATION_ERROR: stakeMinor must be 0 or more")
	}
	if in.WaitSeconds < 0 || in.WaitSeconds > 60 {
		return nil, findGameOutput{}, errors.New("VALIDATION_ERROR: waitSeconds must be 0 to 60")
	}
	out := findGameOutput{GameType: in.GameType, StakeMinor: in.StakeMinor}
	if cur, err := s.currentGame(ctx); err != nil {
		return nil, out, toolError(err)
	} else if cur != nil {
		s.gameStarted()
		return nil, s.matched(out, cur.GameId, string(cur.GameType)), nil
	}

	out, err := s.queue(ctx, in, out)
	if err != nil || out.Status == "matched" {
		return nil, out, err
	}
	deadline := time.Now().Add(time.Duration(in.WaitSeconds) * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, out, nil
		case <-time.After(pollEvery):
		}
		cur, err := s.currentGame(ctx)
		if err != nil {
			return nil, out, toolError(err)
		}
		if cur != nil {
			s.gameStarted()
			return nil, s.matched(out, cur.GameId, string(cur.GameType)), nil
		}
	}
	return nil, out, nil
}

// gameStarted forgets the queue the user waited in: a game took them, and
// its stake, now locked, stays counted against the cap.
func (s *server) gameStarted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued = nil
}

// queue puts the user in the queue of the lobby pickLobby chooses. Each
// queue joined for a stake counts the stake against the spending cap, the
// caps being checked before anything changes: the queue of the call
// before is left first, and its stake given back when the server says the
// user was still waiting there (no game took it).
func (s *server) queue(ctx context.Context, in findGameInput, out findGameOutput) (findGameOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stakeFits(in.StakeMinor); err != nil {
		return out, err
	}
	left := ""
	if s.queued != nil {
		left = s.queued.lobby
		if err := s.leaveQueue(ctx); err != nil {
			return out, toolError(err)
		}
	}
	release, err := s.reserve("a stake", in.StakeMinor)
	if err != nil {
		return out, err
	}
	lobby, created, err := s.pickLobby(ctx, in, left)
	if err != nil {
		release()
		return out, toolError(err)
	}
	out.LobbyID, out.CreatedLobby = lobby, created
	j, err := s.client.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobby, nil)
	if other := otherQueue(err); other != "" {
		// Waiting in a queue this server does not know of (joined before
		// a restart, or by another client of the wallet): leave it.
		if _, lerr := s.client.API.DeleteLobbiesByIdJoinQueueWithResponse(ctx, other, nil); lerr == nil {
			j, err = s.client.API.PostLobbiesByIdJoinQueueWithResponse(ctx, lobby, nil)
		}
	}
	switch {
	case err != nil && !refused(err):
		// The join may have been made: the next call leaves that queue,
		// and gives the stake back only if the user still waits there.
		s.queued = &queueEntry{lobby: lobby, stake: in.StakeMinor, release: release}
		return out, toolError(err)
	case err != nil:
		release()
		if isCode(err, "CONFLICT") {
			// Matched meanwhile?
			if cur, cerr := s.currentGame(ctx); cerr == nil && cur != nil {
				return s.matched(out, cur.GameId, string(cur.GameType)), nil
			}
		}
		return out, toolError(err)
	case j.JSON200 != nil && j.JSON200.Status == "matched" && j.JSON200.GameId != nil:
		return s.matched(out, *j.JSON200.GameId, in.GameType), nil
	}
	s.queued = &queueEntry{lobby: lobby, stake: in.StakeMinor, release: release}
	out.Status = "queued"
	out.Message = "Waiting for an opponent in this lobby's queue. Call find_or_create_game again (with waitSeconds to wait) until the status is matched."
	return out, nil
}

// stakeFits refuses, with a *spendRefused, a stake the caps would refuse
// once the stake of the queue the user waits in is given back. The caller
// holds s.mu.
func (s *server) stakeFits(stake int64) error {
	if stake <= 0 {
		return nil
	}
	var back int64
	still := ""
	if s.queued != nil {
		back = s.queued.stake
		still = "; you are still waiting in lobby " + s.queued.lobby + "'s queue"
	}
	spent := max(s.cap.SpentLastHour()-back, 0)
	switch {
	case stake > s.cap.PerCall:
		return &spendRefused{fmt.Sprintf("a stake of %d USDC minor units: %d is over the cap of %d per call%s", stake, stake, s.cap.PerCall, still)}
	case spent+stake > s.cap.PerHour:
		return &spendRefused{fmt.Sprintf("a stake of %d USDC minor units: %d more would exceed the cap of %d per hour (%d spent in the last hour)%s",
			stake, stake, s.cap.PerHour, spent, still)}
	}
	return nil
}

// leaveQueue takes the user out of the queue find_or_create_game put them
// in. The stake is given back only when the server says the user was
// still waiting there; otherwise a game took them and the stake, locked
// in it, stays counted. The caller holds s.mu.
func (s *server) leaveQueue(ctx context.Context) error {
	_, err := s.client.API.DeleteLobbiesByIdJoinQueueWithResponse(ctx, s.queued.lobby, nil)
	switch {
	case err == nil:
		s.queued.release()
	case !isCode(err, "NOT_FOUND"):
		return err
	}
	s.queued = nil
	return nil
}

func (s *server) matched(out findGameOutput, gameID, gameType string) findGameOutput {
	out.Status, out.GameID, out.GameType = "matched", gameID, gameType
	out.Message = "The game has started: read it with get_game_state (or watch_game) and play with submit_move."
	return out
}

// currentGame returns the user's active game, nil when there is none.
func (s *server) currentGame(ctx context.Context) (*api.GameCurrentGame, error) {
	r, err := s.client.API.GetUsersMeCurrentGameWithResponse(ctx, nil)
	if err != nil {
		return nil, err
	}
	if r.StatusCode() == http.StatusNoContent {
		return nil, nil
	}
	return r.JSON200, nil
}

// pickLobby chooses the lobby to queue at: one where someone waits, else
// the lobby the user just left, else the newest one that fits, else a new
// one; it says whether it opened it.
func (s *server) pickLobby(ctx context.Context, in findGameInput, left string) (id string, created bool, err error) {
	r, err := s.client.API.GetLobbiesWithResponse(ctx, nil)
	if err != nil {
		return "", false, err
	}
	var fitting []api.GameLobby
	if r.JSON200 != nil {
		for _, l := range *r.JSON200 {
			if string(l.GameType) == in.GameType && l.StakeMinor == in.StakeMinor && sameSettings(wager.SettingsMap(l.Settings), in.Settings) {
				fitting = append(fitting, l)
			}
		}
	}
	for _, l := range fitting {
		if l.Queued > 0 {
			return l.Id, false, nil
		}
	}
	for _, l := range fitting {
		if l.Id == left {
			return l.Id, false, nil
		}
	}
	for _, l := range fitting {
		return l.Id, false, nil // the newest one
	}
	req := api.LobbyRequest{GameType: api.LobbyRequestGameType(in.GameType), StakeMinor: in.StakeMinor}
	req.Settings = wager.Settings(in.Settings)
	c, err := s.client.API.PostLobbiesWithResponse(ctx, nil, req)
	if err != nil {
		return "", false, err
	}
	if c.JSON201 == nil {
		return "", false, fmt.Errorf("opening a lobby answered %d", c.StatusCode())
	}
	return c.JSON201.Id, true, nil
}

// sameSettings reports whether a lobby's settings have every value asked.
func sameSettings(have, want map[string]any) bool {
	for k, v := range want {
		a, _ := json.Marshal(have[k])
		b, _ := json.Marshal(v)
		if string(a) != string(b) {
			return false
		}
	}
	return true
}

// otherQueue returns the lobby of a CONFLICT answer to joining a queue
// while waiting in another one, "" for any other answer.
func otherQueue(err error) string {
	var ae *wager.APIError
	if !errors.As(err, &ae) || ae.Code != "CONFLICT" {
		return ""
	}
	var body struct {
		LobbyID string `json:"lobbyId"`
	}
	json.Unmarshal(ae.Body, &body)
	if _, perr := uuid.Parse(body.LobbyID); perr != nil {
		return ""
	}
	return body.LobbyID
}

// isCode reports whether err is the API's error of that code.
func isCode(err error, code string) bool {
	var ae *wager.APIError
	return errors.As(err, &ae) && ae.Code == code
}
