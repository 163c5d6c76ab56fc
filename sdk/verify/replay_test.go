package verify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"wager/domain/game/rules"
	"wager/domain/gamelog/gamerecord"
)

// played is a record of an rps game of three rounds, staked 1 USDC by
// each player, that "a" wins 2-0 (rock over scissors twice), made with
// the game's own rules as the platform makes its events.
func played(t *testing.T) Record { return playedAs(t, "g1", 7) }

// playedAs is played as game id at index of the log.
func playedAs(t *testing.T, id string, index int64) Record {
	t.Helper()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	settings, err := rules.RPS{}.ParseSettings(json.RawMessage(`{"rounds": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	state, opening, err := rules.RPS{}.Start(id, []string{"a", "b"}, settings, start)
	if err != nil {
		t.Fatal(err)
	}
	events := opening
	for round := range 2 {
		for _, m := range []struct{ player, choice string }{{"a", "rock"}, {"b", "scissors"}} {
			salt := bytes.Repeat([]byte{byte(round*2 + len(m.player))}, 16)
			evs, err := state.Move(m.player, json.RawMessage(`"`+m.choice+`"`), start.Add(time.Second), bytes.NewReader(salt))
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, evs...)
		}
	}
	r := Record{Version: 1, Index: index, GameID: id, GameType: "rps", Settings: settings, StakeMinor: 1_000_000, StartedAt: start,
		EndedAt: start.Add(time.Second), Players: []gamerecord.Player{{UserID: "a", WalletAddress: "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV"},
			{UserID: "b", WalletAddress: "2fmz8SuNVyxEP6QwKQs6LNaT2ATszySPEJdhUDesxktc"}},
		Outcome: Outcome{Status: "completed", WinnerUserID: ptr("a"), Reason: "score"},
		Money: gamerecord.Money{PotMinor: 2_000_000, FeeMinor: 20_000, Payouts: []Payout{{UserID: "a", AmountMinor: 1_980_000, Kind: "pot"}},
			Integrity: "none"}}
	for i, e := range events {
		data, _ := json.Marshal(e.Data)
		r.Events = append(r.Events, gamerecord.Event{GameID: id, Seq: i + 1, Name: e.Name, Data: data, CreatedAt: start})
	}
	return r
}

func ptr(s string) *string { return &s }

// A record replays to what it says; each lie about the game or its pot is
// refused with what does not hold.
func TestAReplayedRecordMustEndAndPayAsItSays(t *testing.T) {
	if err := Replay(played(t)); err != nil {
		t.Fatalf("the honest record: %v", err)
	}
	for _, c := range []struct {
		name, want string
		lie        func(r *Record)
	}{
		{"the other winner", `won by "a" on score, by its events; the record says completed, won by "b"`,
			func(r *Record) { r.Outcome.WinnerUserID = ptr("b"); r.Money.Payouts[0].UserID = "b" }},
		{"a payout one minor unit more", "the winner's payout of the pot is 1980000, the record says 1980001",
			func(r *Record) { r.Money.Payouts[0].AmountMinor++ }},
		{"a fee one minor unit less", "the fee on a pot of 2000000 is 20000, the record says 19999",
			func(r *Record) { r.Money.FeeMinor-- }},
		{"a pot bigger than the stakes", "the pot is 2000001",
			func(r *Record) { r.Money.PotMinor++ }},
		{"a choice other than the one committed", "but the choice \"paper\" and salt revealed hash to",
			func(r *Record) { retell(t, r, "rock", "paper") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := played(t)
			c.lie(&r)
			err := Replay(r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

// retell changes the first revealed choice from one to another, leaving
// the commitment made before as it was.
func retell(t *testing.T, r *Record, from, to string) {
	t.Helper()
	for i, e := range r.Events {
		if e.Name == "game:rps:round:reveal" {
			r.Events[i].Data = json.RawMessage(strings.Replace(string(e.Data), `"`+from+`"`, `"`+to+`"`, 1))
			return
		}
	}
	t.Fatal("no reveal to retell")
}
