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

func (p *platform) challenge(t testing.TB, from, to string, stake int64) game.Challenge {
	t.Helper()
	c, err := p.games.CreateChallenge(context.Background(), from, to, "rps", stake, nil)
	if err != nil {
		t.Fatalf("challenge: %v", err)
	}
	return c
}

func (p *platform) pending(t testing.TB, userID string) []string {
	t.Helper()
	cs, err := p.games.Challenges(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestCreateChallenge(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	from, to := p.newPlayer(t, funds), p.newPlayer(t, 0)
	c := p.challenge(t, from, to, stake)
	if c.Status != "pending" || c.FromUser != from || c.ToUser != to || c.StakeMinor != stake ||
		!c.ExpiresAt.Equal(p.clock.now().Add(game.ChallengeLifetime)) {
		t.Errorf("challenge: got %+v, want pending from %s to %s for %d, expiring in %v", c, from, to, stake, game.ChallengeLifetime)
	}
	notices := p.sink.notices(to, "challenge:received")
	var received game.Challenge
	if len(notices) != 1 || json.Unmarshal(notices[0], &received) != nil || received.ID != c.ID {
		t.Errorf("challenge:received notices to the invited user: got %s, want one naming %s", notices, c.ID)
	}
	for _, u := range []string{from, to} {
		if got := p.pending(t, u); !slices.Equal(got, []string{c.ID}) {
			t.Errorf("pending challenges of %s: got %v, want [%s]", u, got, c.ID)
		}
	}
	// A challenge locks nothing: the money moves when it is accepted.
	if got := p.balances(t, from); got != (balances{funds, 0}) {
		t.Errorf("challenger's balances: got %+v", got)
	}

	poor := p.newPlayer(t, stake-1)
	for _, tc := range []struct {
		name, from, to, gameType string
		stake                    int64
		code                     string
	}{
		{"oneself", from, from, "rps", stake, domain.CodeValidation},
		{"an unknown user", from, uuid.NewString(), "rps", stake, domain.CodeNotFound},
		{"not a user id", from, "bob", "rps", stake, domain.CodeNotFound},
		{"an unknown game type", from, to, "chess", stake, domain.CodeValidation},
		{"a stake over the maximum", from, to, "rps", game.MaxStake + 1, domain.CodeValidation},
		{"a stake the challenger cannot cover", poor, to, "rps", stake, domain.CodeInsufficientFunds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.games.CreateChallenge(ctx, tc.from, tc.to, tc.gameType, tc.stake, nil)
			wantCode(t, "CreateChallenge", err, tc.code)
		})
	}
	if got := p.pending(t, poor); len(got) != 0 {
		t.Errorf("pending challenges after a refusal: got %v, want none", got)
	}
	if got := len(p.sink.notices(to, "challenge:received")); got != 1 {
		t.Errorf("challenge:received notices after refusals: got %d, want still 1", got)
	}
}

func TestRespondChallenge(t *testing.T) {
	const from, to, stranger = "challenger", "invited", "stranger"
	for _, tc := range []struct {
		name, by, answer string
		status           string // the challenge's status after the answer
		code             string // the refusal, when refused
		notified         string // who is told
	}{
		{"the invited user accepts", to, "accept", "accepted", "", from},
		{"the invited user declines", to, "decline", "declined", "", from},
		{"the challenger cancels", from, "cancel", "cancelled", "", to},
		{"the challenger accepts", from, "accept", "pending", domain.CodeForbidden, ""},
		{"the challenger declines", from, "decline", "pending", domain.CodeForbidden, ""},
		{"the invited user cancels", to, "cancel", "pending", domain.CodeForbidden, ""},
		{"an unknown answer", to, "maybe", "pending", domain.CodeForbidden, ""},
		{"someone else accepts", stranger, "accept", "pending", domain.CodeNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newPlatform(t)
			users := map[string]string{from: p.newPlayer(t, funds), to: p.newPlayer(t, funds), stranger: p.newPlayer(t, funds)}
			c := p.challenge(t, users[from], users[to], stake)

			got, err := p.games.RespondChallenge(ctx, users[tc.by], c.ID, tc.answer)
			if tc.code != "" {
				wantCode(t, "RespondChallenge", err, tc.code)
			} else if err != nil {
				t.Fatalf("RespondChallenge: %v", err)
			} else if got.Status != tc.status {
				t.Errorf("answer: got status %s, want %s", got.Status, tc.status)
			}
			stored := p.pending(t, users[from])
			if wantPending := tc.status == "pending"; wantPending != slices.Contains(stored, c.ID) {
				t.Errorf("pending challenges of the challenger: got %v, want pending=%v", stored, wantPending)
			}

			locked := int64(0)
			if tc.status == "accepted" {
				locked = stake
				if got.GameID == nil {
					t.Fatal("an accepted challenge names no game")
				}
				g := p.game(t, *got.GameID)
				if want := []string{users[from], users[to]}; g.Status != game.StatusActive || !slices.Equal(g.Players, want) {
					t.Errorf("game: got status %s, seats %v; want active, seats %v (the challenger first)", g.Status, g.Players, want)
				}
				if g.StakeMinor != stake || g.LobbyID != nil {
					t.Errorf("game: got stake %d, lobby %v; want %d and no lobby", g.StakeMinor, g.LobbyID, stake)
				}
			} else if got.GameID != nil {
				t.Errorf("a %s challenge names game %s", tc.status, *got.GameID)
			}
			for _, u := range []string{from, to} {
				if got, want := p.balances(t, users[u]), (balances{funds - locked, locked}); got != want {
					t.Errorf("balances of the %s: got %+v, want %+v", u, got, want)
				}
			}
			if tc.notified != "" {
				if n := p.sink.notices(users[tc.notified], domain.NoticeKind("challenge:"+tc.status)); len(n) != 1 {
					t.Errorf("challenge:%s notices to the %s: got %d, want 1", tc.status, tc.notified, len(n))
				}
			}

			// A challenge is answered once.
			if tc.code == "" {
				for _, again := range []struct{ by, answer string }{{to, "accept"}, {to, "decline"}, {from, "cancel"}} {
					_, err := p.games.RespondChallenge(ctx, users[again.by], c.ID, again.answer)
					wantCode(t, again.answer+" after "+tc.status, err, domain.CodeConflict)
				}
			}
		})
	}
}

func TestChallengeExpires(t *testing.T) {
	for _, tc := range []struct {
		name    string
		after   time.Duration
		expired bool
	}{
		{"a second before it expires", game.ChallengeLifetime - time.Second, false},
		{"when it expires", game.ChallengeLifetime, true},
		{"an hour later", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newPlatform(t)
			from, to := p.newPlayer(t, funds), p.newPlayer(t, funds)
			c := p.challenge(t, from, to, stake)
			p.clock.advance(tc.after)
			if listed := slices.Contains(p.pending(t, to), c.ID); listed == tc.expired {
				t.Errorf("listed as pending: got %v, want %v", listed, !tc.expired)
			}
			got, err := p.games.RespondChallenge(ctx, to, c.ID, "accept")
			if !tc.expired {
				if err != nil || got.Status != "accepted" {
					t.Errorf("accept: got %+v, %v; want accepted", got, err)
				}
				return
			}
			wantCode(t, "accepting an expired challenge", err, domain.CodeConflict)
			if got.Status != "expired" || got.GameID != nil {
				t.Errorf("challenge: got status %s, game %v; want expired, no game", got.Status, got.GameID)
			}
			if n := len(p.sink.notices(from, "challenge:expired")); n != 1 {
				t.Errorf("the challenger was told %d times that the challenge expired, want once", n)
			}
			// The expiry is recorded: every later answer names it.
			_, err = p.games.RespondChallenge(ctx, from, c.ID, "cancel")
			wantCode(t, "cancelling an expired challenge", err, domain.CodeConflict)
			var status string
			if err := p.db.NewSelect().Table("challenges").Column("status").Where("id = ?", c.ID).Scan(ctx, &status); err != nil {
				t.Fatal(err)
			}
			if status != "expired" {
				t.Errorf("stored status: got %s, want expired", status)
			}
			for _, u := range []string{from, to} {
				if got := p.balances(t, u); got != (balances{funds, 0}) {
					t.Errorf("balances: got %+v, want nothing locked", got)
				}
			}
		})
	}
}

// Accepting needs both players free and the stake covered when the answer
// comes, not only when the challenge was made; a refused accept leaves the
// challenge pending.
func TestAcceptRefusedWhileAPlayerCannotPlay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t testing.TB, p *platform, from, to string)
		code    string
	}{
		{"the challenger spent the stake", func(t testing.TB, p *platform, from, to string) {
			p.move(t, "withdrawal", []money.Entry{{Account: money.Available(from), Amount: -(funds - stake + 1)},
				{Account: money.Vault, Amount: funds - stake + 1}})
		}, domain.CodeInsufficientFunds},
		{"the challenger waits in a queue", func(t testing.TB, p *platform, from, to string) {
			if _, err := p.games.JoinQueue(context.Background(), from, p.lobby(t, "rps", 0, "")); err != nil {
				t.Fatal(err)
			}
		}, domain.CodeConflict},
		{"the invited user plays another game", func(t testing.TB, p *platform, from, to string) {
			other := p.newPlayer(t, funds)
			c := p.challenge(t, other, to, 0)
			if _, err := p.games.RespondChallenge(context.Background(), to, c.ID, "accept"); err != nil {
				t.Fatal(err)
			}
		}, domain.CodeConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newPlatform(t)
			from, to := p.newPlayer(t, funds), p.newPlayer(t, funds)
			c := p.challenge(t, from, to, stake)
			tc.prepare(t, p, from, to)
			_, err := p.games.RespondChallenge(ctx, to, c.ID, "accept")
			wantCode(t, "accept", err, tc.code)
			if got := p.pending(t, from); !slices.Contains(got, c.ID) {
				t.Errorf("the challenge after a refused accept: not pending (%v)", got)
			}
			for _, u := range []string{from, to} {
				if got := p.balances(t, u).Locked; got != 0 {
					t.Errorf("locked balance of %s: got %d, want 0", u, got)
				}
			}
		})
	}
}

// TestTheDeadlineWorkerTellsBothPlayersThatAChallengeExpired: a challenge
// nobody answered is marked expired by the deadline worker once its time
// passed, and both users are told (challenge:expired), each once; one
// still in time is left pending.
func TestTheDeadlineWorkerTellsBothPlayersThatAChallengeExpired(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	from, to, later := p.newPlayer(t, funds), p.newPlayer(t, funds), p.newPlayer(t, funds)
	c := p.challenge(t, from, to, stake)
	p.clock.advance(time.Minute)
	young := p.challenge(t, from, later, stake)
	p.clock.advance(game.ChallengeLifetime - time.Minute)
	for range 2 {
		if _, _, err := p.games.RunDeadlinesOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{from, to} {
		notices := p.sink.notices(u, "challenge:expired")
		var told game.Challenge
		if len(notices) != 1 || json.Unmarshal(notices[0], &told) != nil || told.ID != c.ID || told.Status != "expired" {
			t.Errorf("challenge:expired notices to %s: got %s, want one naming %s as expired", u, notices, c.ID)
		}
	}
	if notices := p.sink.notices(later, "challenge:expired"); len(notices) != 0 {
		t.Errorf("the challenge still in time was said to expire: %s", notices)
	}
	statuses := map[string]string{}
	for _, id := range []string{c.ID, young.ID} {
		var status string
		if err := p.db.NewSelect().Table("challenges").Column("status").Where("id = ?", id).Scan(ctx, &status); err != nil {
			t.Fatal(err)
		}
		statuses[id] = status
	}
	if statuses[c.ID] != "expired" || statuses[young.ID] != "pending" {
		t.Errorf("stored statuses: the expired one %s, the young one %s; want expired, pending", statuses[c.ID], statuses[young.ID])
	}
}
