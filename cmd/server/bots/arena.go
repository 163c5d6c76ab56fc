package bots

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"wager.example.com/sdk/api"
)

// The demo arena: a free 10-minute arena is always scheduled or running,
// and the bots that keep games going among themselves play in it, so that
// a newcomer can join one at once and have opponents.
const (
	// ArenaName names the demo arenas the bots schedule.
	ArenaName = "Open arena"
	// ArenaMinutes is how long a demo arena lasts, and ArenaLead how long
	// after it is scheduled it starts (when none runs).
	ArenaMinutes = 10
	ArenaLead    = 2 * time.Minute
	// arenaEvery is how often the bots look at the arenas.
	arenaEvery = 5 * time.Second
	// rejoinEvery is how often an arena bot joins again (which answers at
	// once while it is in): a bot paused after a game nobody moved in
	// plays again.
	rejoinEvery = 30 * time.Second
	// freeBefore is how long before its arena starts a bot stops starting
	// games in the lobby, so that it is free to be paired at the start.
	freeBefore = 30 * time.Second
)

// arenaState is what the bots know of their arenas.
type arenaState struct {
	checkedAt time.Time
	running   string    // the demo arena running now, "" for none
	scheduled string    // the next one
	startsAt  time.Time // when the next one starts
	joinedAt  map[string]map[string]time.Time
	// rooms stops each bot's socket in an arena's room (by arena, then
	// bot): an arena pairs only entrants with a socket in its room, as a
	// person's arena page holds one.
	rooms map[string]map[string]*roomSocket
}

// roomSocket is a bot's socket in an arena's room.
type roomSocket struct {
	stop   context.CancelFunc
	closed atomic.Bool // it gave up (the arena ended, or an error reconnecting could not cure)
}

// arenaTick keeps a demo arena scheduled (bot 0 schedules it through the
// API, to start when the running one ends, or ArenaLead from now) and has
// the arena bots join the scheduled and the running one.
func (b *Bots) arenaTick(ctx context.Context) error {
	now := b.now()
	if len(b.players) == 0 || now.Sub(b.arena.checkedAt) < arenaEvery {
		return nil
	}
	b.arena.checkedAt = now
	owner := b.players[0]
	list, err := owner.api.API.GetTournamentsWithResponse(ctx, &api.GetTournamentsParams{})
	if err != nil {
		return err
	}
	b.arena.running, b.arena.scheduled = "", ""
	end := now.Add(ArenaLead)
	if list.JSON200 != nil {
		for _, t := range *list.JSON200 {
			if t.CreatedBy.UserId != owner.id || t.Name != ArenaName || t.EntryFeeMinor != 0 {
				continue
			}
			switch t.Status {
			case "running":
				b.arena.running = t.Id
				end = maxTime(end, t.EndsAt)
			case "scheduled":
				if b.arena.scheduled == "" {
					b.arena.scheduled, b.arena.startsAt = t.Id, t.StartsAt
				}
			}
		}
	}
	if b.arena.scheduled == "" {
		t, err := owner.api.API.PostTournamentsWithResponse(ctx, nil, api.TournamentNewTournament{Name: ArenaName, GameType: "rps",
			Settings: arenaSettings(), StartsAt: end, DurationMinutes: ArenaMinutes})
		if err != nil {
			return fmt.Errorf("schedule the demo arena: %w", err)
		}
		if t.JSON201 != nil {
			b.arena.scheduled, b.arena.startsAt = t.JSON201.Id, t.JSON201.StartsAt
		}
	}
	if b.arena.joinedAt == nil {
		b.arena.joinedAt = map[string]map[string]time.Time{}
	}
	for i, p := range b.players {
		if !b.playsAmongBots(i) {
			continue
		}
		for _, id := range []string{b.arena.running, b.arena.scheduled} {
			if id == "" || now.Sub(b.arena.joinedAt[id][p.id]) < rejoinEvery {
				continue
			}
			if _, err := p.api.API.PostTournamentsByIdJoinWithResponse(ctx, id, nil); err != nil && !b.settled(err, "join the demo arena") {
				return err
			}
			if b.arena.joinedAt[id] == nil {
				b.arena.joinedAt[id] = map[string]time.Time{}
			}
			b.arena.joinedAt[id][p.id] = now
			b.enterRoom(ctx, p, id)
		}
	}
	for id := range b.arena.joinedAt {
		if id != b.arena.running && id != b.arena.scheduled {
			delete(b.arena.joinedAt, id)
		}
	}
	for id, bots := range b.arena.rooms {
		if id != b.arena.running && id != b.arena.scheduled {
			for _, r := range bots {
				r.stop()
			}
			delete(b.arena.rooms, id)
		}
	}
	return nil
}

// enterRoom opens bot p's socket in the room of arena id unless it holds
// one there, and reads the room's events until the arena ends, ctx ends,
// or the arena is no longer the bots' (arenaTick stops it). A socket that
// could not open, or gave up, is opened again at the next join.
func (b *Bots) enterRoom(ctx context.Context, p player, id string) {
	if b.arena.rooms == nil {
		b.arena.rooms = map[string]map[string]*roomSocket{}
	}
	if b.arena.rooms[id] == nil {
		b.arena.rooms[id] = map[string]*roomSocket{}
	}
	if r := b.arena.rooms[id][p.id]; r != nil && !r.closed.Load() {
		return
	}
	room, stop := context.WithCancel(ctx)
	f, err := p.api.FollowTournament(room, id)
	if err != nil {
		stop()
		b.log.Warn("demo bots: open a socket in the arena's room", "bot", p.id, "arena", id, "err", err)
		return
	}
	r := &roomSocket{stop: stop}
	b.arena.rooms[id][p.id] = r
	go func() {
		for range f.Events { // the bots read the arena through the API
		}
		r.closed.Store(true)
	}()
}

// inArena reports whether bot i plays in a demo arena that runs now or
// starts within freeBefore: it stays out of the lobby, where the arena
// could not pair it.
func (b *Bots) inArena(i int) bool {
	soon := b.arena.scheduled != "" && !b.now().Before(b.arena.startsAt.Add(-freeBefore))
	return (b.arena.running != "" || soon) && b.playsAmongBots(i)
}

// playsAmongBots reports whether bot i keeps games going among the bots
// (the others stay free for people).
func (b *Bots) playsAmongBots(i int) bool {
	return !(b.count >= 3 && i >= (b.count-1)&^1)
}

// arenaSettings are the demo arena's games: best of 3 at a person's pace
// (20-second rounds), since newcomers play in it beside the bots.
func arenaSettings() *api.GameSettings {
	var s api.GameSettings
	s.UnmarshalJSON([]byte(`{"rounds": 3, "roundSeconds": 20}`))
	return &s
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
