package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"wager.example.com/sdk/api"
)

// addTournamentTools registers the tools of tournaments (arenas).
func (s *server) addTournamentTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s.mcp, &mcp.Tool{Name: "list_tournaments", Annotations: readOnly,
		InputSchema: inputSchema[listTournamentsInput](func(p map[string]*jsonschema.Schema) {
			p["status"].Enum = []any{"scheduled", "running", "finished", "cancelled"}
		}),
		Description: "Lists tournaments (arenas): by default the scheduled and running ones, soonest first; or those of one status. " +
			"Each has its id, name, game type and settings, entry fee and prize pool in USDC minor units (1 USDC = 1000000), " +
			"prize split in basis points, start and end, status and player count. In an arena the players are paired again and " +
			"again into free games until it ends (a win scores 2, a draw 1, a win after two wins in a row 4); the entry fees, " +
			"less 1%, are the prizes. Free; needs no wallet."}, s.listTournaments)
	addTool(s.mcp, &mcp.Tool{Name: "get_tournament", Annotations: readOnly,
		Description: "Returns a tournament with its standings (rank, score, games, wins, draws, losses, onFire, and currentGameId: " +
			"the game a player is in now) and, once finished, its prizes; `you` is your own line when you are in it. Call it again " +
			"to follow the tournament: while it runs, play the game in you.currentGameId with get_game_state and submit_move; " +
			"a new one is paired within seconds of the last one's end, until endsAt. Free; needs no wallet."}, s.getTournament)
	addTool(s.mcp, &mcp.Tool{Name: "join_tournament",
		Description: "COSTS MONEY: enters a tournament until its endsAt (joining late is allowed), locking its entry fee " +
			"(entryFeeMinor) from your platform balance; the fee goes to the prize pool. The fee counts against the spending cap " +
			"before anything moves (refused over it, nothing locked). Joining while in, or again after withdraw_tournament from a " +
			"running tournament, pays nothing (the fee must still fit the cap, and is given back). An arena pairs only entrants connected to it: " +
			"this server holds a socket in the arena's room for you from this call until the arena ends or withdraw_tournament. " +
			"Then follow it with get_tournament and play each game you are paired in. Errors: " +
			"AGENTS_NOT_ALLOWED (the arena's agentsAllowed is false: it is for people, and this tool never enters it), " +
			"CONFLICT (full or over), INSUFFICIENT_FUNDS, LINKED_ACCOUNT (a paid tournament refuses an account linked to one of its " +
			"entrants), and player protection's LIMIT_EXCEEDED and SELF_EXCLUDED with the " +
			"limit and when it ends. Needs the wallet."}, s.joinTournament)
	addTool(s.mcp, &mcp.Tool{Name: "declare_bot",
		Description: "Marks your account a bot, for good (it cannot be undone): an agent must play from a bot account. Profiles and " +
			"game pages then say so, and arenas for people (agentsAllowed false) refuse it. Call it once, before the first game. " +
			"Free; needs the wallet."}, s.declareBot)
	addTool(s.mcp, &mcp.Tool{Name: "withdraw_tournament",
		Description: "Leaves a tournament: before its start the entry fee is refunded to your platform balance (and given back " +
			"to the spending cap); after it you stay in the standings with your fee in the pool, and are not paired again until " +
			"join_tournament (which then pays nothing). A game you are playing still counts. Free; needs the wallet."}, s.withdrawTournament)
}

type listTournamentsInput struct {
	Status string `json:"status,omitempty" jsonschema:"only tournaments of this status: scheduled, running, finished or cancelled (default: scheduled and running)"`
}

type tournamentsOutput struct {
	Tournaments []api.Tournament `json:"tournaments" jsonschema:"scheduled and running ones soonest first; finished and cancelled ones latest first"`
}

func (s *server) listTournaments(ctx context.Context, _ *mcp.CallToolRequest, in listTournamentsInput) (*mcp.CallToolResult, tournamentsOutput, error) {
	switch in.Status {
	case "", "scheduled", "running", "finished", "cancelled":
	default:
		return nil, tournamentsOutput{}, errors.New("VALIDATION_ERROR: status must be scheduled, running, finished or cancelled")
	}
	list, err := s.client.Tournaments(ctx, in.Status)
	if err != nil {
		return nil, tournamentsOutput{}, toolError(err)
	}
	return nil, tournamentsOutput{Tournaments: list}, nil
}

type tournamentInput struct {
	TournamentID string `json:"tournamentId" jsonschema:"the tournament's id (a UUID)"`
}

type tournamentOutput struct {
	api.TournamentDetail
	You *api.TournamentStanding `json:"you,omitempty" jsonschema:"your line of the standings, when you are in the tournament; currentGameId is the game to play now"`
}

func (s *server) getTournament(ctx context.Context, _ *mcp.CallToolRequest, in tournamentInput) (*mcp.CallToolResult, tournamentOutput, error) {
	id, err := parseID("tournamentId", in.TournamentID)
	if err != nil {
		return nil, tournamentOutput{}, err
	}
	t, err := s.client.Tournament(ctx, id)
	if err != nil {
		return nil, tournamentOutput{}, toolError(err)
	}
	out := tournamentOutput{TournamentDetail: *t}
	if i := standingOf(t.Standings, s.client.UserID()); i >= 0 {
		out.You = &t.Standings[i]
	}
	return nil, out, nil
}

// standingOf returns the index of the user's line in the standings, -1
// when they are not in them (or userID is "": no wallet).
func standingOf(standings []api.TournamentStanding, userID string) int {
	if userID == "" {
		return -1
	}
	return slices.IndexFunc(standings, func(st api.TournamentStanding) bool { return st.UserId == userID })
}

// joinTournament enters the user, counting the entry fee against the
// spending cap first. The fee is counted even for a user the standings
// show in already (whose return pays nothing): another client of the
// wallet may have withdrawn them meanwhile, and the fee would then be
// locked past the cap. A join that locked nothing gives it back.
func (s *server) joinTournament(ctx context.Context, _ *mcp.CallToolRequest, in tournamentInput) (*mcp.CallToolResult, api.TournamentEntry, error) {
	if err := s.needWallet(); err != nil {
		return nil, api.TournamentEntry{}, err
	}
	id, err := parseID("tournamentId", in.TournamentID)
	if err != nil {
		return nil, api.TournamentEntry{}, err
	}
	t, err := s.client.Tournament(ctx, id)
	if err != nil {
		return nil, api.TournamentEntry{}, toolError(err)
	}
	if !t.AgentsAllowed {
		// The server refuses bot accounts only; an agent is one whatever
		// its account says.
		return nil, api.TournamentEntry{}, errors.New("AGENTS_NOT_ALLOWED: this arena is for people (agentsAllowed is false): an agent may not enter it")
	}
	release, err := s.reserve("an entry fee", t.EntryFeeMinor)
	if err != nil {
		return nil, api.TournamentEntry{}, err
	}
	e, err := s.client.JoinTournament(ctx, id)
	if err != nil {
		if refused(err) {
			release()
		}
		return nil, api.TournamentEntry{}, toolError(err)
	}
	if e.LockedMinor == 0 {
		release()
	} else {
		s.mu.Lock()
		s.entries[id] = release
		s.mu.Unlock()
	}
	if err := s.enterRoom(id); err != nil {
		return nil, api.TournamentEntry{}, fmt.Errorf("entered, but the arena's room did not open, and the arena pairs only entrants in it (call join_tournament again): %w", err)
	}
	return nil, *e, nil
}

// enterRoom opens a socket in the arena's room, unless one is open, and
// keeps it until the arena ends or withdraw_tournament: the arena pairs
// only entrants with a socket in its room, as a person's arena page holds
// one. It outlives the tool call that opened it.
func (s *server) enterRoom(id string) error {
	s.mu.Lock()
	open := s.rooms[id] != nil
	s.mu.Unlock()
	if open {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	f, err := s.client.FollowTournament(ctx, id) // not under s.mu: the other tools go on meanwhile
	if err != nil {
		stop()
		return err
	}
	mine := &stop
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rooms[id] != nil { // another join_tournament opened one meanwhile
		stop()
		return nil
	}
	s.rooms[id] = mine
	go func() {
		for range f.Events { // the agent reads the arena through the tools
		}
		s.mu.Lock()
		if s.rooms[id] == mine && f.Err() != nil { // gave up: the next join_tournament opens it again
			delete(s.rooms, id)
		}
		s.mu.Unlock()
		stop()
	}()
	return nil
}

func (s *server) declareBot(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, api.MyProfile, error) {
	if err := s.needWallet(); err != nil {
		return nil, api.MyProfile{}, err
	}
	p, err := s.client.DeclareBot(ctx)
	if err != nil {
		return nil, api.MyProfile{}, toolError(err)
	}
	return nil, *p, nil
}

// withdrawTournament takes the user out of a tournament; an entry fee
// refunded before the start is given back to the spending cap.
func (s *server) withdrawTournament(ctx context.Context, _ *mcp.CallToolRequest, in tournamentInput) (*mcp.CallToolResult, api.TournamentEntry, error) {
	if err := s.needWallet(); err != nil {
		return nil, api.TournamentEntry{}, err
	}
	id, err := parseID("tournamentId", in.TournamentID)
	if err != nil {
		return nil, api.TournamentEntry{}, err
	}
	e, err := s.client.WithdrawTournament(ctx, id)
	if err != nil {
		return nil, api.TournamentEntry{}, toolError(err)
	}
	s.mu.Lock()
	if stop := s.rooms[id]; stop != nil {
		(*stop)()
		delete(s.rooms, id)
	}
	s.mu.Unlock()
	if e.RefundedMinor > 0 {
		s.mu.Lock()
		release := s.entries[id]
		delete(s.entries, id)
		s.mu.Unlock()
		if release != nil {
			release()
		}
	}
	return nil, *e, nil
}
