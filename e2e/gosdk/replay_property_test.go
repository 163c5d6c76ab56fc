package wager_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"wager.example.com/sdk/gamerecord"
	"wager.example.com/sdk/verify"
	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/settlement"
)

// The verifier replays games with rules of its own, written apart from
// the server's. Over random games played with the server's rules (moves,
// rounds and turns lost on time, abandoned games, resignations, staked
// or free), the verifier accepts every honest record, and refuses each
// record told with another winner, a payout one minor unit off,
// donations understated by one minor unit (the pot, payout and end told
// to match; free games take donations too), a fee without a winner or a
// stake refunded short.
func TestTheVerifiersRulesAgreeWithTheServers(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := mrand.New(mrand.NewPCG(seed, 1))
	counts := map[string]int{}
	for i := range 3000 {
		rec := randomRecord(t, r, fmt.Sprintf("game-%d", i))
		counts[rec.GameType+" "+rec.Outcome.Reason]++
		if err := verify.Replay(rec); err != nil {
			t.Fatalf("seed %d, game %d: an honest record refused: %v", seed, i, err)
		}
		if w := rec.Outcome.WinnerUserID; w != nil {
			lie := rec
			other := map[string]string{"a": "b", "b": "a"}[*w]
			lie.Outcome.WinnerUserID = &other
			if verify.Replay(lie) == nil {
				t.Fatalf("seed %d, game %d: a record naming the loser as winner is accepted", seed, i)
			}
		}
		if len(rec.Money.Payouts) > 0 && rec.Money.Payouts[0].Kind == gamerecord.PayoutPot {
			lie := rec
			lie.Money.Payouts = []gamerecord.Payout{rec.Money.Payouts[0]}
			lie.Money.Payouts[0].AmountMinor++
			if verify.Replay(lie) == nil {
				t.Fatalf("seed %d, game %d: a payout one minor unit more is accepted", seed, i)
			}
			if rec.Money.DonationsMinor > 1 {
				// One minor unit of the donations kept out of the pot, and
				// the fee, the payout and game:completed told to match: only
				// the donations' own events tell.
				lie.Money.DonationsMinor--
				lie.Money.PotMinor--
				fee, payout := game.Payout(lie.Money.PotMinor)
				lie.Money.FeeMinor, lie.Money.Payouts[0].AmountMinor = fee, payout
				lie.Events = slices.Clone(rec.Events)
				lie.Events[len(lie.Events)-1].Data = completedData(t, game.Completed{GameID: lie.GameID, Status: lie.Outcome.Status,
					Result: game.Result{WinnerID: lie.Outcome.WinnerUserID, Reason: lie.Outcome.Reason, Settlement: game.Settlement{
						PotMinor: lie.Money.PotMinor, SpectatorPotMinor: lie.Money.DonationsMinor, FeeMinor: fee, PayoutMinor: payout}}})
				if verify.Replay(lie) == nil {
					t.Fatalf("seed %d, game %d: donations understated by one minor unit, the pot, payout and end to match, are accepted", seed, i)
				}
				counts["donated"]++
				if rec.StakeMinor == 0 {
					counts["donated to a free game"]++
				}
			}
		}
		if rec.Outcome.WinnerUserID == nil && rec.Money.PotMinor > 0 {
			lie := rec
			lie.Money.FeeMinor = 1
			if verify.Replay(lie) == nil {
				t.Fatalf("seed %d, game %d: a fee taken without a winner is accepted", seed, i)
			}
			if rec.StakeMinor > 0 {
				lie = rec
				lie.Money.Payouts = slices.Clone(rec.Money.Payouts)
				lie.Money.Payouts[0].AmountMinor--
				if verify.Replay(lie) == nil {
					t.Fatalf("seed %d, game %d: a stake refunded short by one minor unit is accepted", seed, i)
				}
				counts["refunded"]++
			}
		}
	}
	for _, want := range []string{"donated", "donated to a free game", "refunded", "rps score", "rps resign", "rps abandoned", "connect4 connect4", "connect4 timeout", "connect4 resign"} {
		if counts[want] == 0 {
			t.Errorf("no game ended %q in %v: the generator misses a way to end", want, counts)
		}
	}
}

// randomRecord plays a random game to its end with the server's rules,
// between players "a" and "b", and records it as the log does.
func randomRecord(t *testing.T, r *mrand.Rand, id string) gamerecord.Record {
	t.Helper()
	players := []string{"a", "b"}
	gameType, settings := "connect4", json.RawMessage(`{"turnSeconds": 30}`)
	if r.IntN(2) == 0 {
		gameType, settings = "rps", json.RawMessage(fmt.Sprintf(`{"rounds": %d}`, 1+2*r.IntN(5)))
	}
	g, _ := rules.Get(gameType)
	settings, err := g.ParseSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	state, events, err := g.Start(id, players, settings, now)
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; !state.Outcome().Done; step++ {
		if step > 1000 {
			t.Fatalf("game %s does not end", id)
		}
		var evs []rules.Event
		p, n := players[r.IntN(2)], r.IntN(100)
		switch {
		case n < 2:
			evs, err = state.Resign(p, now)
		case n < 8:
			now = now.Add(time.Hour) // past the round's or turn's time
			evs = state.Expire(now)
		case gameType == "rps":
			evs, err = state.Move(p, json.RawMessage(`"`+[]string{"rock", "paper", "scissors"}[r.IntN(3)]+`"`), now, rand.Reader)
		default:
			evs, err = state.Move(p, json.RawMessage(fmt.Sprintf(`{"column": %d}`, r.IntN(7))), now, nil)
		}
		if err == nil {
			events = append(events, evs...)
		}
		err = nil // a refused move (not their turn, a full column, chosen already) changes nothing
	}
	o := state.Outcome()
	stake, donated := int64(0), int64(0)
	if r.IntN(2) == 0 {
		stake = int64(1 + r.IntN(5_000_000))
	}
	// Spectators donate while the game runs, to free games too: each
	// donation's event lands between the game's own, before its end.
	for range r.IntN(3) {
		amount := int64(1 + r.IntN(1_000_000))
		donated += amount
		at := r.IntN(len(events) + 1)
		events = slices.Insert(events, at, rules.Event{Name: domain.EventDonation, Data: settlement.Donated{
			Donor: chat.UserRef{UserID: "c", Username: "carol"}, AmountMinor: amount, Signature: "sig"}})
	}
	rec := gamerecord.Record{Version: 1, GameID: id, GameType: gameType, Settings: settings, StartedAt: now, EndedAt: now,
		Players: []gamerecord.Player{{UserID: "a"}, {UserID: "b"}},
		Outcome: gamerecord.Outcome{Status: "completed", Reason: o.Reason}, Money: gamerecord.Money{Integrity: "none"}}
	if o.Reason == "abandoned" {
		rec.Outcome.Status = "cancelled"
	}
	rec.StakeMinor, rec.Money.DonationsMinor, rec.Money.PotMinor = stake, donated, 2*stake+donated
	end := game.Completed{GameID: id, Status: rec.Outcome.Status, Result: game.Result{Reason: o.Reason, Draw: o.Winner == "",
		Settlement: game.Settlement{PotMinor: rec.Money.PotMinor, PlayerPotMinor: 2 * stake, SpectatorPotMinor: donated}}}
	if o.Winner != "" {
		rec.Outcome.WinnerUserID, end.WinnerID = &o.Winner, &o.Winner
		fee, payout := game.Payout(rec.Money.PotMinor)
		rec.Money.FeeMinor, end.FeeMinor = fee, fee
		if payout > 0 {
			end.PayoutMinor = payout
			rec.Money.Payouts = []gamerecord.Payout{{UserID: o.Winner, AmountMinor: payout, Kind: gamerecord.PayoutPot}}
		}
	} else if stake > 0 {
		for _, p := range players {
			rec.Money.Payouts = append(rec.Money.Payouts, gamerecord.Payout{UserID: p, AmountMinor: stake, Kind: gamerecord.PayoutRefund})
		}
	}
	events = append(events, rules.Event{Name: domain.EventGameCompleted, Data: end})
	for i, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		rec.Events = append(rec.Events, gamerecord.Event{GameID: id, Seq: i + 1, Name: string(e.Name), Data: data, CreatedAt: now})
	}
	return rec
}

// completedData is game:completed's data as the platform encodes it.
func completedData(t *testing.T, end game.Completed) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(end)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
