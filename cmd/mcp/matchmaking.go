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

	wager "wager/sdk"
	"wager/sdk/api"
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
// a lobby of that kind, opened when there is none. When two agents open
// two lobbies at once, the one queued at the lobby with the greater id
// moves to the other at its next call, so they still meet.
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
		return nil, s.matched(out, cur.GameId, cur.GameType), nil
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
			s.mu.Lock()
			s.queuedLobby = ""
			s.mu.Unlock()
			return nil, s.matched(out, cur.GameId, cur.GameType), nil
		}
	}
	return nil, out, nil
}

// queue joins the queue of the lobby pickLobby chooses, leaving the one
// the user waited at before.
func (s *server) queue(ctx context.Context, in findGameInput, out findGameOutput) (findGameOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	release := func() {}
	if s.queuedLobby == "" {
		// The stake is locked when the game starts: count it when the
		// user first queues for it, before any lobby is opened.
		var err error
		if release, err = s.reserve("a stake", in.StakeMinor); err != nil {
			return out, err
		}
	}
	lobby, created, err := s.pickLobby(ctx, in)
	if err != nil {
		release()
		return out, toolError(err)
	}
	out.LobbyID, out.CreatedLobby = lobby, created
	if s.queuedLobby != "" && s.queuedLobby != lobby {
		if _, err := s.client.API.DeleteLobbiesByIdJoinQueueWithResponse(ctx, uuid.MustParse(s.queuedLobby), nil); err != nil && !isCode(err, "NOT_FOUND") {
			release()
			return out, toolError(err)
		}
	}
	j, err := s.client.API.PostLobbiesByIdJoinQueueWithResponse(ctx, uuid.MustParse(lobby), nil)
	if other := otherQueue(err); other != "" {
		// Waiting in a queue this server does not know of (joined before
		// a restart, or by another client of the wallet): leave it.
		if _, lerr := s.client.API.DeleteLobbiesByIdJoinQueueWithResponse(ctx, uuid.MustParse(other), nil); lerr == nil {
			j, err = s.client.API.PostLobbiesByIdJoinQueueWithResponse(ctx, uuid.MustParse(lobby), nil)
		}
	}
	if err != nil {
		s.queuedLobby = ""
		release()
		if isCode(err, "CONFLICT") {
			// Matched meanwhile?
			if cur, cerr := s.currentGame(ctx); cerr == nil && cur != nil {
				return s.matched(out, cur.GameId, cur.GameType), nil
			}
		}
		return out, toolError(err)
	}
	if j.JSON200 != nil && j.JSON200.Status == "matched" && j.JSON200.GameId != nil {
		s.queuedLobby = ""
		return s.matched(out, *j.JSON200.GameId, in.GameType), nil
	}
	s.queuedLobby = lobby
	out.Status = "queued"
	out.Message = "Waiting for an opponent in this lobby's queue. Call find_or_create_game again (with waitSeconds to wait) until the status is matched."
	return out, nil
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

// pickLobby chooses the lobby to queue at, opening one when no lobby
// fits, and says whether it opened it. The caller holds s.mu.
func (s *server) pickLobby(ctx context.Context, in findGameInput) (id string, created bool, err error) {
	r, err := s.client.API.GetLobbiesWithResponse(ctx, nil)
	if err != nil {
		return "", false, err
	}
	var fitting []api.GameLobby
	if r.JSON200 != nil {
		for _, l := range *r.JSON200 {
			if l.GameType == in.GameType && l.StakeMinor == in.StakeMinor && sameSettings(l.Settings, in.Settings) {
				fitting = append(fitting, l)
			}
		}
	}
	mine := s.queuedLobby
	queuedHere := false
	for _, l := range fitting {
		if l.Id == mine {
			queuedHere = true
		}
	}
	// Someone waiting elsewhere: join them, unless both wait at lobbies of
	// their own; then the greater lobby id gives way.
	for _, l := range fitting {
		if l.Id != mine && waitingOthers(l, mine) > 0 && (!queuedHere || l.Id < mine) {
			return l.Id, false, nil
		}
	}
	if queuedHere {
		return mine, false, nil
	}
	for _, l := range fitting {
		return l.Id, false, nil // the newest one
	}
	req := api.LobbyRequest{GameType: in.GameType, StakeMinor: in.StakeMinor}
	if in.Settings != nil {
		settings := map[string]any(in.Settings)
		req.Settings = &settings
	}
	c, err := s.client.API.PostLobbiesWithResponse(ctx, nil, req)
	if err != nil {
		return "", false, err
	}
	if c.JSON201 == nil {
		return "", false, fmt.Errorf("opening a lobby answered %d", c.StatusCode())
	}
	return c.JSON201.Id, true, nil
}

// waitingOthers is how many players wait at l, not counting the user when
// queued there.
func waitingOthers(l api.GameLobby, mine string) int64 {
	if l.Id == mine {
		return l.Queued - 1
	}
	return l.Queued
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
