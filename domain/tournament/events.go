package tournament

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
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
	Reason        string `json:"reason"`
	RefundedMinor int64  `json:"refundedMinor" doc:"the entry fees given back, all together"`
}

// Finished is the data of tournament:finished.
type Finished struct {
	Prizes    []Prize    `json:"prizes" doc:"what each winner was paid to their available balance"`
	FeeMinor  int64      `json:"feeMinor"`
	Standings []Standing `json:"standings" doc:"the final standings' first 100 lines"`
}

// Event is one stored event of a tournament's room.
type Event struct {
	bun.BaseModel `bun:"table:tournament_events"`

	TournamentID string           `bun:"tournament_id,pk,type:uuid" json:"tournamentId"`
	Seq          int              `bun:"seq,pk" json:"seq"`
	Name         domain.EventName `bun:"name" json:"event"`
	Data         json.RawMessage  `bun:"data,type:jsonb" json:"data" type:"object" doc:"the event's payload; its shape depends on the event name"`
	CreatedAt    time.Time        `bun:"created_at" json:"createdAt"`
}

// Sink receives the events a transaction appended, right after it
// commits, on the committing goroutine: it must not block.
type Sink interface {
	TournamentEvents(evs []Event)
}

// Sinks hands events to each of its sinks in turn.
type Sinks []Sink

// TournamentEvents implements Sink.
func (s Sinks) TournamentEvents(evs []Event) {
	for _, sink := range s {
		sink.TournamentEvents(evs)
	}
}

// appendEvents stores events after the tournament's last one in tx (the
// caller holds the tournament's row lock, so they are numbered in commit
// order) and hands them to the sink once tx commits.
func (s *Service) appendEvents(ctx context.Context, tx db.Tx, id string, now time.Time, events ...domain.Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	names, datas := make([]string, len(events)), make([]string, len(events))
	rows := make([]Event, len(events))
	for i, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return nil, fmt.Errorf("encode event %s of tournament %s: %w", e.Name, id, err)
		}
		names[i], datas[i] = string(e.Name), string(data)
		rows[i] = Event{TournamentID: id, Name: e.Name, Data: data, CreatedAt: now}
	}
	var seqs []int
	err := tx.NewRaw(`WITH t AS (UPDATE tournaments SET seq = seq + ? WHERE id = ? RETURNING seq)
		INSERT INTO tournament_events (tournament_id, seq, name, data, created_at)
		SELECT ?, t.seq - ? + v.ord, v.name, v.data::jsonb, ? FROM t, unnest(?::text[], ?::text[]) WITH ORDINALITY AS v (name, data, ord)
		RETURNING seq`, len(events), id, id, len(events), now, pgdialect.Array(names), pgdialect.Array(datas)).Scan(ctx, &seqs)
	if err != nil {
		return nil, fmt.Errorf("append events to tournament %s: %w", id, err)
	}
	slices.Sort(seqs)
	for i := range rows {
		rows[i].Seq = seqs[i]
	}
	if s.sink != nil {
		if err := tx.AfterCommit(func() { s.sink.TournamentEvents(rows) }); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// EventsAfter returns a tournament's events with seq greater than after,
// in order, at most limit of them. NOT_FOUND when there is no such
// tournament.
func (s *Service) EventsAfter(ctx context.Context, id string, after, limit int) ([]Event, error) {
	out := []Event{}
	id, ok := domain.CanonicalID(id)
	if !ok {
		return nil, errNoTournament
	}
	if err := s.db.NewSelect().Model(&out).Where("tournament_id = ? AND seq > ?", id, after).
		Order("seq").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read events of tournament %s: %w", id, err)
	}
	if len(out) == 0 {
		if seqs, err := s.LastSeqs(ctx, []string{id}); err != nil {
			return nil, err
		} else if _, ok := seqs[id]; !ok {
			return nil, errNoTournament
		}
	}
	return out, nil
}

// LastSeqs returns the seq of the last event of each of the tournaments.
func (s *Service) LastSeqs(ctx context.Context, ids []string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID  string `bun:"id"`
		Seq int    `bun:"seq"`
	}
	if err := s.db.NewSelect().Table("tournaments").Column("id", "seq").Where("id = ANY(?::uuid[])", pgdialect.Array(ids)).
		Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read the last seqs of %d tournaments: %w", len(ids), err)
	}
	for _, r := range rows {
		out[r.ID] = r.Seq
	}
	return out, nil
}

// Announce is the Sink that tells the other instances which tournaments
// have new events up to which seq (the instance's eventlog.Announcer,
// which sends them with the games' news): they read the rows themselves,
// and a lost announcement delays them until their periodic check of the
// rooms they serve.
type Announce func(id string, seq int)

// TournamentEvents implements Sink.
func (f Announce) TournamentEvents(evs []Event) {
	for _, e := range evs {
		f(e.TournamentID, e.Seq)
	}
}
