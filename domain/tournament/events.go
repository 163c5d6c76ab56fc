package tournament

import (
	"context"
	"time"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
)

// Events are the tournament room's events by name, each with its data
// type (see rules.Events): the live protocol's document is generated from
// them.
var Events = map[domain.EventName]any{domain.EventTournamentStandings: Standings{}, domain.EventTournamentPairing: Paired{},
	domain.EventTournamentStarted: Started{}, domain.EventTournamentCancelled: Cancelled{}, domain.EventTournamentFinished: Finished{}}

// Standings is the data of tournament:standings: the first StandingsRows
// lines of the standings, sent at most once a second while they change.
type Standings struct {
	Status         string     `json:"status" enum:"scheduled,running,finished,cancelled"`
	PlayerCount    int        `json:"playerCount" doc:"every entrant; the lines below are the first 100 at most"`
	MaxPlayers     int        `json:"maxPlayers"`
	PrizePoolMinor int64      `json:"prizePoolMinor"`
	Standings      []Standing `json:"standings"`
}

// Paired is the data of tournament:pairing: a game of the tournament
// started.
type Paired struct {
	GameID  string    `json:"gameId"`
	Players []UserRef `json:"players" doc:"in seat order"`
}

// Started is the data of tournament:started.
type Started struct {
	StartsAt    time.Time `json:"startsAt"`
	EndsAt      time.Time `json:"endsAt"`
	PlayerCount int       `json:"playerCount"`
}

// Cancelled is the data of tournament:cancelled: fewer than two players at
// the start, every entry refunded.
type Cancelled struct {
	Reason        string `json:"reason" doc:"why, in words for people"`
	RefundedMinor int64  `json:"refundedMinor" doc:"the entry fees given back, all together"`
}

// Finished is the data of tournament:finished.
type Finished struct {
	Prizes    []Prize    `json:"prizes" doc:"what each winner was paid to their available balance"`
	FeeMinor  int64      `json:"feeMinor"`
	Standings []Standing `json:"standings" doc:"the final standings' first 100 lines"`
}

// appendEvents stores events after the tournament's last one in tx (the
// caller holds the tournament's row lock, so they are numbered in commit
// order); the tournament's room receives them once tx commits.
func (s *Service) appendEvents(ctx context.Context, tx db.Tx, id string, now time.Time, events ...domain.Event) error {
	_, err := s.events.Append(ctx, tx, domain.TournamentStreamOf(id), now, events...)
	return err
}

// EventsAfter returns a tournament's events with seq greater than after,
// in order, at most limit of them. NOT_FOUND when there is no such
// tournament.
func (s *Service) EventsAfter(ctx context.Context, id string, after, limit int) ([]eventlog.Event, error) {
	id, ok := domain.CanonicalID(id)
	if !ok {
		return nil, errNoTournament
	}
	out, err := s.events.Events(ctx, domain.TournamentStreamOf(id), after, limit)
	if err != nil || len(out) > 0 {
		return out, err
	}
	if seqs, err := s.events.LastSeqs(ctx, domain.TournamentStream, []string{id}); err != nil {
		return nil, err
	} else if _, ok := seqs[id]; !ok {
		return nil, errNoTournament
	}
	return out, nil
}
