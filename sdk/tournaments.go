package wager

import (
	"context"
	"errors"
	"fmt"

	"wager.example.com/sdk/api"
)

// Why a tournament refused a join or a withdrawal
// (TournamentClosedError.Reason).
const (
	// TournamentFull: every place is taken.
	TournamentFull = "full"
	// TournamentOver: the tournament finished, was cancelled, or its time
	// is up (no game starts after endsAt).
	TournamentOver = "over"
	// TournamentNotEntered: a withdrawal from a tournament the user is not
	// in.
	TournamentNotEntered = "not-entered"
)

// TournamentClosedError is the 409 CONFLICT answer to joining or
// withdrawing from a tournament, with the reason read from the tournament
// right after the refusal. It unwraps to its *APIError.
type TournamentClosedError struct {
	TournamentID string
	// Reason is TournamentFull, TournamentOver or TournamentNotEntered;
	// "" when the tournament could not be read after the refusal.
	Reason string
	// Status is the tournament's status as read after the refusal
	// (scheduled, running, finished, cancelled; "" when unread).
	Status string
	Err    *APIError
}

func (e *TournamentClosedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("wager: tournament %s refused: %s", e.TournamentID, e.Err.Message)
	}
	return fmt.Sprintf("wager: tournament %s is %s: %s", e.TournamentID, e.Reason, e.Err.Message)
}

func (e *TournamentClosedError) Unwrap() error { return e.Err }

// Tournaments returns the tournaments (arenas) of a status: "scheduled",
// "running", "finished" or "cancelled"; "" for the scheduled and running
// ones, soonest first. It returns the API's error (*APIError, 400 for an
// unknown status).
func (c *Client) Tournaments(ctx context.Context, status string) ([]api.Tournament, error) {
	params := &api.GetTournamentsParams{}
	if status != "" {
		s := api.GetTournamentsParamsStatus(status)
		params.Status = &s
	}
	r, err := c.API.GetTournamentsWithResponse(ctx, params)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil {
		return []api.Tournament{}, nil
	}
	return *r.JSON200, nil
}

// Tournament returns a tournament with its standings (every entrant, best
// first; ties share a rank) and, once finished, its prizes. It returns
// the API's error (*APIError with NOT_FOUND).
func (c *Client) Tournament(ctx context.Context, id string) (*api.TournamentDetail, error) {
	r, err := c.API.GetTournamentsByIdWithResponse(ctx, id, nil)
	if err != nil {
		return nil, err
	}
	return answer(r.JSON200, r.StatusCode())
}

// JoinTournament enters the user in a tournament until its endsAt
// (joining late is allowed), locking its entry fee from the available
// platform balance; after a withdrawal from a running tournament it has
// the user paired again without paying twice, and while the user is in
// it answers the entry unchanged (LockedMinor says what this call
// locked). It returns *InsufficientFundsError, *TournamentClosedError
// (full or over), player protection's refusals (*LimitExceededError,
// *SelfExcludedError, ...: an entry fee is money in), or *APIError (code
// LINKED_ACCOUNT: a paid tournament refuses an account linked to one of
// its entrants; AGENTS_NOT_ALLOWED: the arena is for people and the
// account is a bot, see DeclareBot). An arena pairs only entrants with a
// socket in its room (or on the page of their last game there): keep a
// FollowTournament open while you play, as PlayArena does.
func (c *Client) JoinTournament(ctx context.Context, id string) (*api.TournamentEntry, error) {
	r, err := c.API.PostTournamentsByIdJoinWithResponse(ctx, id, nil)
	if err != nil {
		return nil, c.tournamentRefusal(ctx, id, err, false)
	}
	return answer(r.JSON200, r.StatusCode())
}

// DeclareBot marks the signed-in account a bot, for good: a program that
// plays must play from a bot account (profiles and pages say so, and an
// arena whose AgentsAllowed is false refuses it). Call it once when the
// bot first signs in; calling it again changes nothing.
func (c *Client) DeclareBot(ctx context.Context) (*api.MyProfile, error) {
	r, err := c.API.PostUsersMeBotWithResponse(ctx, nil)
	if err != nil {
		return nil, err
	}
	return answer(r.JSON200, r.StatusCode())
}

// WithdrawTournament takes the user out of a tournament: before its start
// the entry fee is refunded (RefundedMinor); after it the user stays in the
// standings, the fee in the pool, and is not paired until JoinTournament.
// It returns *TournamentClosedError (over, or not entered) or *APIError.
func (c *Client) WithdrawTournament(ctx context.Context, id string) (*api.TournamentEntry, error) {
	r, err := c.API.PostTournamentsByIdWithdrawWithResponse(ctx, id, nil)
	if err != nil {
		return nil, c.tournamentRefusal(ctx, id, err, true)
	}
	return answer(r.JSON200, r.StatusCode())
}

// PauseTournament stops pairing the user in a tournament until
// ResumeTournament; a game being played is not touched (play it out or
// resign it). Two games in a row lost on time pause the user too
// (PausedReason in the standings). It returns *TournamentClosedError
// (over, or not entered) or *APIError.
func (c *Client) PauseTournament(ctx context.Context, id string) (*api.TournamentEntry, error) {
	r, err := c.API.PostTournamentsByIdPauseWithResponse(ctx, id, nil)
	if err != nil {
		return nil, c.tournamentRefusal(ctx, id, err, true)
	}
	return answer(r.JSON200, r.StatusCode())
}

// ResumeTournament has a paused user paired again. It returns
// *TournamentClosedError (over, or not entered: JoinTournament enters)
// or *APIError (AGENTS_NOT_ALLOWED).
func (c *Client) ResumeTournament(ctx context.Context, id string) (*api.TournamentEntry, error) {
	r, err := c.API.PostTournamentsByIdResumeWithResponse(ctx, id, nil)
	if err != nil {
		return nil, c.tournamentRefusal(ctx, id, err, true)
	}
	return answer(r.JSON200, r.StatusCode())
}

// Berserk halves the user's time in their current game of a tournament,
// before their first move of it, for a point more on a win (after 7 of
// their moves in Connect Four, or 2 rounds). It returns *APIError with
// CONFLICT when the user is not playing a game of it now, moved already
// or went berserk already.
func (c *Client) Berserk(ctx context.Context, id string) (*api.TournamentBerserkAnswer, error) {
	r, err := c.API.PostTournamentsByIdBerserkWithResponse(ctx, id, nil)
	if err != nil {
		return nil, err
	}
	return answer(r.JSON200, r.StatusCode())
}

// tournamentRefusal turns a CONFLICT answer of a join or withdrawal into a
// *TournamentClosedError, reading the tournament to say why: the answer's
// message is for people. Other errors are returned as they are.
func (c *Client) tournamentRefusal(ctx context.Context, id string, err error, withdrawing bool) error {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "CONFLICT" {
		return err
	}
	out := &TournamentClosedError{TournamentID: id, Err: ae}
	t, terr := c.Tournament(ctx, id)
	if terr != nil {
		return out
	}
	out.Status = string(t.Status)
	switch {
	case t.Status == "finished" || t.Status == "cancelled":
		out.Reason = TournamentOver
	case withdrawing:
		out.Reason = TournamentNotEntered
	case t.PlayerCount >= t.MaxPlayers && c.now().Before(t.EndsAt):
		out.Reason = TournamentFull
	default:
		// Not over and not full: the server's clock passed endsAt.
		out.Reason = TournamentOver
	}
	return out
}

// answer checks that a successful answer had its body.
func answer[T any](v *T, status int) (*T, error) {
	if v == nil {
		return nil, fmt.Errorf("wager: the server answered %d without the expected body", status)
	}
	return v, nil
}
