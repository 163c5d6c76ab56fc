package verify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"wager.example.com/sdk/gamerecord"
)

// played is a record of an rps game of three rounds, staked 1 USDC by
// each player, that "a" wins 2-0 (rock over scissors twice), made by the
// platform's rules (the golden vectors).
func played(t *testing.T) Record { return goldenRecord(t, 0) }

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
		{"the payout split in two, one of them negative", "a payout of the pot of -5 is not a positive amount",
			func(r *Record) {
				r.Money.Payouts[0].AmountMinor += 5
				r.Money.Payouts = append(r.Money.Payouts, Payout{UserID: "a", AmountMinor: -5, Kind: gamerecord.PayoutPot})
			}},
		{"a free game's donations kept", "the pot is 0, but 2 players staked 0 and donors gave 500000: 500000",
			func(r *Record) {
				*r = goldenRecord(t, 2)
				r.StakeMinor, r.Money.PotMinor, r.Money.FeeMinor, r.Money.Payouts = 0, 0, 0, nil
			}},
		{"a negative stake", "a stake of -1 and donations of 0 are not amounts a pot holds",
			func(r *Record) { r.StakeMinor = -1 }},
		{"stakes that wrap to nothing", "a stake of 4611686018427387904 and donations of 0 are not amounts a pot holds",
			func(r *Record) { r.StakeMinor, r.Money.PotMinor, r.Money.FeeMinor, r.Money.Payouts = 1<<62, 0, 0, nil }},
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

// A record's money must be what its own events say: the donations it
// counts are its game:donation events, and its game:completed tells the
// same end. A platform that keeps a donation out of the pot, and pays the
// winner and tells the end accordingly, is refused though the pot adds
// up.
func TestARecordsMoneyMustBeWhatItsEventsSay(t *testing.T) {
	donated := goldenRecord(t, 2)
	if donated.Money.DonationsMinor != 500_000 {
		t.Fatalf("golden record 2 has donations of %d, want the 500000 its README says", donated.Money.DonationsMinor)
	}
	if err := Replay(donated); err != nil {
		t.Fatalf("the honest record of a game with a donation: %v", err)
	}
	for _, c := range []struct {
		name, want string
		record     func(*testing.T) Record
		lie        func(r *Record)
	}{
		{"a donation understated, the pot and payout to match", "the record says donors gave 400000, but its game:donation events give 500000",
			func(t *testing.T) Record { return goldenRecord(t, 2) }, func(r *Record) { donations(r, 400_000) }},
		{"a donation left out, the pot and payout to match", "the record says donors gave 0, but its game:donation events give 500000",
			func(t *testing.T) Record { return goldenRecord(t, 2) }, func(r *Record) { donations(r, 0) }},
		{"a donation made up", "the record says donors gave 100, but its game:donation events give 0",
			played, func(r *Record) { donations(r, 100) }},
		{"a donation of nothing", "no positive amountMinor",
			func(t *testing.T) Record { return goldenRecord(t, 2) }, func(r *Record) {
				r.Events[1].Data = json.RawMessage(strings.Replace(string(r.Events[1].Data), `"amountMinor":500000`, `"amountMinor":-500000`, 1))
			}},
		{"donations that overflow to the record's", "no positive amountMinor that adds to the others'",
			played, func(r *Record) {
				huge := gamerecord.Event{GameID: r.GameID, Name: "game:donation", Data: json.RawMessage(`{"amountMinor":9223372036854775807}`)}
				small := gamerecord.Event{GameID: r.GameID, Name: "game:donation", Data: json.RawMessage(`{"amountMinor":102}`)}
				r.Events = append([]gamerecord.Event{huge, huge, small}, r.Events...)
				for i := range r.Events {
					r.Events[i].Seq = i + 1
				}
				donations(r, 100) // what two of the largest amounts and 102 add up to, wrapped
			}},
		{"the end left out", "last event is game:rps:round:reveal, not game:completed",
			played, func(r *Record) { r.Events = r.Events[:len(r.Events)-1] }},
		{"an event after the end", "game:completed is event 9, not the last",
			played, func(r *Record) {
				r.Events = append(r.Events, gamerecord.Event{GameID: r.GameID, Seq: 10, Name: "game:chat:message", Data: json.RawMessage(`{}`)})
			}},
		{"an end that told another fee", "its game:completed says game game-0 completed, won by \"a\" on score, pot 2000000 with donations 0, fee 19999",
			played, func(r *Record) {
				end := &r.Events[len(r.Events)-1]
				end.Data = json.RawMessage(strings.Replace(string(end.Data), `"feeMinor":20000`, `"feeMinor":19999`, 1))
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.record(t)
			c.lie(&r)
			err := Replay(r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

// donations retells a won record as if donors gave amount: the pot, the
// fee, the winner's payout and game:completed made to match, so that only
// the donations' own events can tell.
func donations(r *Record, amount int64) {
	r.Money.PotMinor += amount - r.Money.DonationsMinor
	r.Money.DonationsMinor = amount
	r.Money.FeeMinor = r.Money.PotMinor * feeBps / 10_000
	r.Money.Payouts[0].AmountMinor = r.Money.PotMinor - r.Money.FeeMinor
	end, err := json.Marshal(completed{GameID: r.GameID, Status: r.Outcome.Status, WinnerID: *r.Outcome.WinnerUserID, Reason: r.Outcome.Reason,
		PotMinor: r.Money.PotMinor, SpectatorPotMinor: amount, FeeMinor: r.Money.FeeMinor, PayoutMinor: r.Money.Payouts[0].AmountMinor})
	if err != nil {
		panic(err)
	}
	r.Events[len(r.Events)-1].Data = end
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

// A record whose events are not one game's play, in order, is refused,
// each with what does not hold.
func TestARecordMustBeOneGamesPlayInOrder(t *testing.T) {
	for _, c := range []struct {
		name, want string
		lie        func(r *Record)
	}{
		{"one user in both seats", `players "a" and "a" are not two users`,
			func(r *Record) { r.Players[1].UserID = "a" }},
		{"a round both chose in, resigned instead of revealed", "both players chose in round 2, and the round is not revealed next",
			func(r *Record) {
				r.Events = append(r.Events[:7], gamerecord.Event{GameID: r.GameID, Seq: 8, Name: "game:rps:resign",
					Data: json.RawMessage(`{"round": 2, "userId": "a", "winnerId": "b"}`)})
				r.Outcome = Outcome{Status: "completed", WinnerUserID: ptr("b"), Reason: "resign"}
				r.Money.Payouts[0].UserID = "b"
			}},
		{"a salt too short to hide the choice", "is not a choice and its salt",
			func(r *Record) {
				r.Events[3].Data = json.RawMessage(strings.Replace(string(r.Events[3].Data), `"01010101010101010101010101010101"`, `"01"`, 1))
			}},
		{"another game's event", "an event of game other",
			func(r *Record) { r.Events[2].GameID = "other" }},
		{"events out of order", "out of order, after event 3",
			func(r *Record) { r.Events[3].Seq = 2 }},
		{"a Connect Four move in rock, paper, scissors", "an event of another game type than rps",
			func(r *Record) {
				r.Events[4] = gamerecord.Event{GameID: r.GameID, Seq: 5, Name: "game:connect4:move", Data: json.RawMessage(`{"userId": "a", "column": 3, "row": 5}`)}
			}},
		{"a move after the end", "event 9 (game:rps:round:start): a move after the game ended",
			func(r *Record) {
				end := r.Events[len(r.Events)-1]
				end.Seq = 10
				r.Events = append(r.Events[:len(r.Events)-1],
					gamerecord.Event{GameID: r.GameID, Seq: 9, Name: "game:rps:round:start", Data: json.RawMessage(`{"round": 3}`)}, end)
			}},
		{"a round started out of turn", "round 3 starts when round 2 is due",
			func(r *Record) { r.Events[4].Data = json.RawMessage(`{"round": 3}`) }},
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

// A record whose readers could disagree on an amount is refused: Go's
// decoder reads a member named twice, or in another case, as the last
// one, other languages' as the first or the exact one.
func TestARecordNamesEachMemberOnce(t *testing.T) {
	for i := range 3 {
		if err := oneKeyEach(readGolden(t, fmt.Sprintf("record-%d.json", i))); err != nil {
			t.Errorf("golden record %d: %v", i, err)
		}
	}
	for _, ok := range []string{`{}`, `[]`, `[{"a":1},{"a":2}]`, `{"a":{"a":1},"b":[{"a":[]},{"a":{}}]}`, `{"a":[1,{"b":2}],"b":{}}`} {
		if err := oneKeyEach([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, lie := range []string{
		`{"potMinor":1,"potMinor":2}`,
		`{"money":{"potMinor":1,"POTMINOR":2}}`,
		`{"events":[{"data":{"amountMinor":500000,"AmountMinor":1}}]}`,
		`{"a":[1,{"b":2}],"b":{},"A":0}`,
		`{"\u212aind":"pot","kind":"refund"}`, // the Kelvin sign folds to k
	} {
		if err := oneKeyEach([]byte(lie)); err == nil || !strings.Contains(err.Error(), "twice, or in two spellings") {
			t.Errorf("%s: got %v, want it refused for a member named twice", lie, err)
		}
	}
}
