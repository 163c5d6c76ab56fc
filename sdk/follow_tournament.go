package wager

import (
	"context"
	"encoding/json"
	"strings"

	"wager.example.com/sdk/api"
)

// Event names of a tournament's room (API.md "Tournaments (arenas)").
const (
	// EventTournamentJoined is the first event of FollowTournament: Data
	// is the tournament as GET /tournaments/:id answers it
	// (*api.TournamentDetail) and Seq the seq it reflects.
	EventTournamentJoined = "joined-tournament"
	// EventTournamentStandings: the first 100 lines of the standings, at
	// most once a second while they change (*api.TournamentStandings).
	EventTournamentStandings = "tournament:standings"
	// EventTournamentPairing: a game of the tournament started
	// (*api.TournamentPaired).
	EventTournamentPairing = "tournament:pairing"
	// EventTournamentStarted: the tournament started (*api.TournamentStarted).
	EventTournamentStarted = "tournament:started"
	// EventTournamentCancelled ends a tournament that had fewer than two
	// players at its start, every entry refunded
	// (*api.TournamentCancelled); the channel closes after it.
	EventTournamentCancelled = "tournament:cancelled"
	// EventTournamentFinished ends a tournament, with its prizes and final
	// standings (*api.TournamentFinished); the channel closes after it.
	EventTournamentFinished = "tournament:finished"
)

// TournamentEvent is one event of a followed tournament.
type TournamentEvent struct {
	TournamentID string
	// Seq numbers the tournament's events from 1, without gaps.
	Seq int64
	// Name is the event's name (the EventTournament constants).
	Name string
	// Data is the event's payload; its shape depends on Name.
	Data json.RawMessage
}

// Payload returns the event's data decoded into its type: for
// EventTournamentJoined an *api.TournamentDetail, for
// EventTournamentPairing an *api.TournamentPaired, and so on (see the
// EventTournament constants). It returns an error for a name this SDK
// does not know (a newer server's) or data that does not decode.
func (e TournamentEvent) Payload() (any, error) {
	if e.Name == EventTournamentJoined {
		v := new(api.TournamentDetail)
		return v, decode(e.Name, e.Data, v)
	}
	return payload(payloads, e.Name, e.Data)
}

// TournamentFollow is a tournament followed live. Events delivers every
// event of the tournament after the one FollowTournament started from,
// each once and in seq order, across reconnects; it closes after
// tournament:finished or tournament:cancelled (at once after the first
// event when the tournament was already over), when the context ends, or
// on an error that reconnecting cannot cure (then Err says which).
type TournamentFollow struct {
	Events <-chan TournamentEvent

	f follower[TournamentEvent]
}

// Err returns why Events closed early: nil after the tournament's end or
// when the context ended, else the error.
func (f *TournamentFollow) Err() error { return f.f.Err() }

// Reconnects returns how many times the socket was opened again.
func (f *TournamentFollow) Reconnects() int { return f.f.Reconnects() }

// FollowTournament opens the live socket (/ws), joins the tournament's
// room and returns its events; the first is EventTournamentJoined with
// the tournament. After a disconnect it reconnects and rejoins from the
// last seq it delivered (reading over HTTP what the room cannot replay),
// so that no event is lost or repeated; told to resync, it rejoins the
// same way. It needs a signed-in client (a wallet or a token). It returns
// the API's error when the socket is refused or the join fails (*APIError
// with NOT_FOUND).
func (c *Client) FollowTournament(ctx context.Context, id string) (*TournamentFollow, error) {
	tf := new(TournamentFollow)
	if err := tf.f.start(ctx, c, tournamentRoom(c, id), &tf.Events); err != nil {
		return nil, err
	}
	return tf, nil
}

// tournamentRoom is a tournament's room. Its frames carry no game id; a
// refusal to rejoin it, or a join that fails on the socket, ends
// following with the refusal.
func tournamentRoom(c *Client, id string) room[TournamentEvent] {
	return room[TournamentEvent]{
		kind: "tournament", id: id, join: "join-tournament", idKey: "tournamentId",
		joined: EventTournamentJoined, resumed: "resumed-tournament", resync: "resync-tournament",
		state: func(fr *frame) json.RawMessage { return fr.Tournament },
		// A tournament that is over can still be joined: its state is the
		// last word.
		over: func(state json.RawMessage) bool {
			var head struct {
				Status string `json:"status"`
			}
			json.Unmarshal(state, &head)
			return head.Status == "finished" || head.Status == "cancelled"
		},
		mine: func(fr *frame) bool {
			return fr.GameID == "" && (fr.TournamentID == "" || strings.EqualFold(fr.TournamentID, id))
		},
		event: func(seq int64, name string, data json.RawMessage) TournamentEvent {
			return TournamentEvent{TournamentID: id, Seq: seq, Name: name, Data: data}
		},
		final: []string{EventTournamentFinished, EventTournamentCancelled},
		record: func(ctx context.Context, after int64) ([]recorded, error) {
			r, err := c.API.GetTournamentsByIdEventsWithResponse(ctx, id, &api.GetTournamentsByIdEventsParams{After: &after})
			if err != nil {
				return nil, err
			}
			return recordPage(r.StatusCode(), r.Body)
		},
		refused: func(ae *APIError) ending {
			if ae.Status >= 400 && ae.Status < 500 {
				return giveUp
			}
			return goOn
		},
		failed: func(fr *frame) ending {
			if fr.TournamentID != "" {
				return giveUp
			}
			return goOn
		},
	}
}
