package game_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/domain"
	"wager/domain/game"
	"wager/domain/money"
)

// finished returns a game that a won by b's resignation.
func (p *platform) finished(t testing.TB, stake int64) (gameID, a, b string) {
	t.Helper()
	gameID, a, b = p.match(t, "rps", stake, `{"rounds": 5}`)
	if _, err := p.act(b, gameID, "resign", ""); err != nil {
		t.Fatal(err)
	}
	return gameID, a, b
}

func wantRematch(t testing.TB, what string, got game.Rematch, status string, requestedBy ...string) {
	t.Helper()
	if requestedBy == nil {
		requestedBy = []string{}
	}
	if got.Status != status || !slices.Equal(got.RequestedBy, requestedBy) {
		t.Errorf("%s: got status %s requested by %v, want %s requested by %v", what, got.Status, got.RequestedBy, status, requestedBy)
	}
}

func TestRematchRefusals(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	active, a, _ := p.match(t, "rps", stake, "")
	over, c, _ := p.finished(t, stake)
	stranger := p.newPlayer(t, funds)
	for _, tc := range []struct {
		name, user, game, code string
	}{
		{"a game still being played", a, active, domain.CodeConflict},
		{"someone who did not play", stranger, over, domain.CodeNotAPlayer},
		{"an unknown game", c, uuid.NewString(), domain.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.games.RequestRematch(ctx, tc.user, tc.game)
			wantCode(t, "RequestRematch", err, tc.code)
			_, err = p.games.CancelRematch(ctx, tc.user, tc.game)
			wantCode(t, "CancelRematch", err, tc.code)
		})
	}
	for _, id := range []string{active, over} {
		r, err := p.games.RematchOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantRematch(t, "after refusals", r, "none")
	}
}

// Both players asking starts a new game for the same stake and settings
// with the seats reversed; one asking tells the other.
func TestRematchStartsWhenBothAsk(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	old, a, b := p.finished(t, stake)
	fee := int64(2 * stake / 100)
	eventsBefore := p.eventNames(t, old)

	r, err := p.games.RequestRematch(ctx, a, old)
	if err != nil {
		t.Fatal(err)
	}
	wantRematch(t, "a asked", r, "requested", a)
	if n := p.sink.notices(b, "rematch:requested"); len(n) != 1 {
		t.Errorf("rematch:requested notices to the other player: got %d, want 1", len(n))
	}
	r, err = p.games.RequestRematch(ctx, a, old)
	if err != nil {
		t.Fatal(err)
	}
	wantRematch(t, "a asked again", r, "requested", a)

	r, err = p.games.CancelRematch(ctx, a, old)
	if err != nil {
		t.Fatal(err)
	}
	wantRematch(t, "a withdrew", r, "none")
	r, err = p.games.CancelRematch(ctx, a, old)
	if err != nil {
		t.Fatal(err)
	}
	wantRematch(t, "a withdrew again", r, "none")

	if _, err := p.games.RequestRematch(ctx, b, old); err != nil {
		t.Fatal(err)
	}
	p.clock.advance(time.Second) // requests are listed in the order they came
	r, err = p.games.RequestRematch(ctx, a, old)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "started" || r.NewGameID == nil || !slices.Equal(r.RequestedBy, []string{b, a}) {
		t.Fatalf("both asked: got %+v, want started with a new game", r)
	}
	wantNames(t, "events of the finished game", p.eventNames(t, old)[len(eventsBefore):], []string{
		"game:rematch:requested", "game:rematch:cancelled", "game:rematch:requested", "game:rematch:requested", "game:rematch:started"})
	evs := p.events(t, old)
	var started game.RematchStarted
	if err := json.Unmarshal(evs[len(evs)-1].Data, &started); err != nil || started.NewGameID != *r.NewGameID {
		t.Errorf("game:rematch:started: got %s, want newGameId %s", evs[len(evs)-1].Data, *r.NewGameID)
	}

	oldGame, ng := p.game(t, old), p.game(t, *r.NewGameID)
	if ng.Status != game.StatusActive || ng.RematchOf == nil || *ng.RematchOf != old {
		t.Errorf("new game: got status %s, rematch of %v; want active, rematch of %s", ng.Status, ng.RematchOf, old)
	}
	if want := []string{b, a}; !slices.Equal(ng.Players, want) {
		t.Errorf("new game's seats: got %v, want %v (reversed)", ng.Players, want)
	}
	if ng.StakeMinor != oldGame.StakeMinor || string(ng.Settings) != string(oldGame.Settings) || ng.GameType != oldGame.GameType {
		t.Errorf("new game: got %s for %d with %s, want %s for %d with %s",
			ng.GameType, ng.StakeMinor, ng.Settings, oldGame.GameType, oldGame.StakeMinor, oldGame.Settings)
	}
	// a won the first game; both stakes are locked again.
	if got, want := p.balances(t, a), (balances{funds + stake - fee - stake, stake}); got != want {
		t.Errorf("a's balances: got %+v, want %+v", got, want)
	}
	if got, want := p.balances(t, b), (balances{funds - stake - stake, stake}); got != want {
		t.Errorf("b's balances: got %+v, want %+v", got, want)
	}
	for _, u := range []string{a, b} {
		if got := p.currentGame(t, u); got != ng.ID {
			t.Errorf("current game of %s: got %q, want the rematch %s", u, got, ng.ID)
		}
	}

	// Once started, another request is a conflict naming the new game.
	_, err = p.games.RequestRematch(ctx, b, old)
	wantCode(t, "a request after the start", err, domain.CodeConflict)
	if e, ok := err.(*domain.Error); ok && e.Extra["newGameId"] != ng.ID {
		t.Errorf("conflict's newGameId: got %v, want %s", e.Extra["newGameId"], ng.ID)
	}
	read, err := p.games.RematchOf(ctx, old)
	if err != nil || read.Status != "started" || read.NewGameID == nil || *read.NewGameID != ng.ID {
		t.Errorf("RematchOf: got %+v, %v; want started with %s", read, err, ng.ID)
	}

	// A rematch of the rematch reverses the seats again.
	if _, err := p.act(a, ng.ID, "resign", ""); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{a, b} {
		r, err = p.games.RequestRematch(ctx, u, ng.ID)
		if err != nil {
			t.Fatal(err)
		}
	}
	if third := p.game(t, *r.NewGameID); !slices.Equal(third.Players, []string{a, b}) {
		t.Errorf("third game's seats: got %v, want %v", third.Players, []string{a, b})
	}
}

// A rematch that cannot start (a stake not covered, a player busy) leaves
// everything as it was, the second request included.
func TestRematchThatCannotStartWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t testing.TB, p *platform, winner, loser string)
		code    string
	}{
		{"the loser no longer covers the stake", func(t testing.TB, p *platform, winner, loser string) {
			p.move(t, "withdrawal", []money.Entry{{Account: money.Available(loser), Amount: -(funds - stake - 1)},
				{Account: money.Vault, Amount: funds - stake - 1}})
		}, domain.CodeInsufficientFunds},
		{"the winner waits in a queue", func(t testing.TB, p *platform, winner, loser string) {
			if _, err := p.games.JoinQueue(context.Background(), winner, p.lobby(t, "rps", 0, "")); err != nil {
				t.Fatal(err)
			}
		}, domain.CodeConflict},
		{"the loser plays another game", func(t testing.TB, p *platform, winner, loser string) {
			opponent := p.newPlayer(t, funds)
			c, err := p.games.CreateChallenge(context.Background(), opponent, loser, "rps", 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.games.RespondChallenge(context.Background(), loser, c.ID, "accept"); err != nil {
				t.Fatal(err)
			}
		}, domain.CodeConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newPlatform(t)
			old, a, b := p.finished(t, stake)
			if _, err := p.games.RequestRematch(ctx, a, old); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, p, a, b)
			before := map[string]balances{a: p.balances(t, a), b: p.balances(t, b)}
			events := p.eventNames(t, old)

			_, err := p.games.RequestRematch(ctx, b, old)
			wantCode(t, "the second request", err, tc.code)
			r, err := p.games.RematchOf(ctx, old)
			if err != nil {
				t.Fatal(err)
			}
			wantRematch(t, "after the refusal", r, "requested", a)
			wantNames(t, "events", p.eventNames(t, old), events)
			for u, want := range before {
				if got := p.balances(t, u); got != want {
					t.Errorf("balances of %s: got %+v, want %+v", u, got, want)
				}
			}
		})
	}
}

// Withdrawing a request after the rematch started has nothing left to
// withdraw: the rematch is being played.
func TestCancellingAStartedRematchChangesNothing(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	old, a, b := p.finished(t, stake)
	for _, u := range []string{a, b} {
		if _, err := p.games.RequestRematch(ctx, u, old); err != nil {
			t.Fatal(err)
		}
		p.clock.advance(time.Second)
	}
	events := p.eventNames(t, old)
	r, err := p.games.CancelRematch(ctx, a, old)
	wantCode(t, "CancelRematch after the start", err, domain.CodeConflict)
	if err == nil {
		wantRematch(t, "after a cancel", r, "started", a, b)
	}
	wantNames(t, "events", p.eventNames(t, old), events)
}

// A player who opens a lobby for the rematch tells the room and the other
// player where to find it.
func TestAnnounceRematchLobby(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	old, a, b := p.finished(t, stake)
	lobby := p.lobby(t, "rps", stake, "")
	stranger := p.newPlayer(t, 0)
	active, c, _ := p.match(t, "rps", stake, "")
	for _, tc := range []struct {
		name, user, game, lobby, code string
	}{
		{"an unknown lobby", a, old, uuid.NewString(), domain.CodeNotFound},
		{"not a lobby id", a, old, "lobby", domain.CodeValidation},
		{"someone who did not play", stranger, old, lobby, domain.CodeNotAPlayer},
		{"a game still being played", c, active, lobby, domain.CodeConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, "AnnounceRematchLobby", p.games.AnnounceRematchLobby(ctx, tc.user, tc.game, tc.lobby), tc.code)
		})
	}
	events := p.eventNames(t, old)
	if err := p.games.AnnounceRematchLobby(ctx, a, old, lobby); err != nil {
		t.Fatal(err)
	}
	wantNames(t, "new events", p.eventNames(t, old)[len(events):], []string{"game:rematch:lobby"})
	evs := p.events(t, old)
	var announced game.RematchLobby
	if err := json.Unmarshal(evs[len(evs)-1].Data, &announced); err != nil || announced != (game.RematchLobby{UserID: a, LobbyID: lobby}) {
		t.Errorf("game:rematch:lobby: got %s, want %s opening %s", evs[len(evs)-1].Data, a, lobby)
	}
	notices := p.sink.notices(b, "rematch:lobby")
	var notice game.RematchLobbyNotice
	if len(notices) != 1 || json.Unmarshal(notices[0], &notice) != nil || notice != (game.RematchLobbyNotice{GameID: old, LobbyID: lobby}) {
		t.Errorf("rematch:lobby notices to the other player: got %s, want one naming %s", notices, lobby)
	}
	if n := p.sink.notices(a, "rematch:lobby"); len(n) != 0 {
		t.Errorf("rematch:lobby notices to the player who opened it: got %d, want 0", len(n))
	}
}
