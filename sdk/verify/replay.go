package verify

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/gamelog/gamerecord"
)

// Record is a record of the public log of games (see the API's
// Verifiability section).
type Record = gamerecord.Record

// Outcome is how a record says its game ended, and Payout a payment it
// lists.
type (
	Outcome = gamerecord.Outcome
	Payout  = gamerecord.Payout
)

// feeBps is the platform's fee on a won pot, in basis points: 1%, floored.
const feeBps = 100

// Replay plays the record's game again with the game's rules, from its
// own events (the moves, and for rock-paper-scissors the choices and salts
// each reveal opens, checked against the commitments made before), and
// checks that it ends as the record says and that the pot paid the winner
// what the record says to the minor unit. Each error says what does not
// hold.
func Replay(r Record) error {
	g, ok := rules.Get(r.GameType)
	if !ok {
		return fmt.Errorf("record %d: game type %q is not one this verifier knows", r.Index, r.GameType)
	}
	players := make([]string, len(r.Players))
	for i, p := range r.Players {
		players[i] = p.UserID
	}
	// The moves are replayed at the game's start: the rules' clocks
	// matter only to time-outs, which the record's reveals and
	// time-out events state.
	now := r.StartedAt
	state, _, err := g.Start(r.GameID, players, r.Settings, now)
	if err != nil {
		return fmt.Errorf("record %d: the game does not start from its record: %w", r.Index, err)
	}
	reveals, err := revealsOf(r)
	if err != nil {
		return err
	}
	for _, e := range r.Events {
		if err := replayEvent(state, r, e, reveals, now); err != nil {
			return fmt.Errorf("record %d, event %d (%s): %w", r.Index, e.Seq, e.Name, err)
		}
	}
	return checkOutcome(r, state.Outcome())
}

// revealsOf are the choices and salts each revealed round of a
// rock-paper-scissors game opened, by round and player.
func revealsOf(r Record) (map[int]rules.RPSRound, error) {
	out := map[int]rules.RPSRound{}
	for _, e := range r.Events {
		if e.Name != domain.EventRPSRoundReveal {
			continue
		}
		var round rules.RPSRound
		if err := json.Unmarshal(e.Data, &round); err != nil {
			return nil, fmt.Errorf("record %d, event %d: an unreadable reveal: %w", r.Index, e.Seq, err)
		}
		out[round.Round] = round
	}
	return out, nil
}

// expired is a time past every deadline: a round or turn the record says
// was lost on time is closed at it.
var expired = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func replayEvent(state rules.State, r Record, e gamerecord.Event, reveals map[int]rules.RPSRound, now time.Time) error {
	switch e.Name {
	case domain.EventRPSRoundSubmitted:
		var s rules.RPSSubmitted
		if err := json.Unmarshal(e.Data, &s); err != nil {
			return err
		}
		round, ok := reveals[s.Round]
		if !ok || round.Choices[s.UserID] == nil {
			return nil // discarded unrevealed by a resignation: it decided nothing
		}
		salt, err := hex.DecodeString(*round.Salts[s.UserID])
		if err != nil {
			return fmt.Errorf("the salt revealed for %s in round %d is not hex: %w", s.UserID, s.Round, err)
		}
		move, _ := json.Marshal(*round.Choices[s.UserID])
		evs, err := state.Move(s.UserID, move, now, bytes.NewReader(salt))
		if err != nil {
			return fmt.Errorf("the rules refuse %s's move %s in round %d: %w", s.UserID, move, s.Round, err)
		}
		var made rules.RPSSubmitted
		if len(evs) > 0 {
			made, _ = evs[0].Data.(rules.RPSSubmitted)
		}
		if made.Commitment != s.Commitment {
			return fmt.Errorf("%s committed %s in round %d, but the choice %s and salt revealed hash to %s",
				s.UserID, s.Commitment, s.Round, move, made.Commitment)
		}
	case domain.EventRPSRoundReveal:
		var round rules.RPSRound
		if err := json.Unmarshal(e.Data, &round); err != nil {
			return err
		}
		if round.Reason != "played" {
			state.Expire(expired)
		}
	case domain.EventConnect4Move:
		var m rules.C4Moved
		if err := json.Unmarshal(e.Data, &m); err != nil {
			return err
		}
		if _, err := state.Move(m.UserID, json.RawMessage(fmt.Sprintf(`{"column": %d}`, m.Column)), now, nil); err != nil {
			return fmt.Errorf("the rules refuse %s's move in column %d: %w", m.UserID, m.Column, err)
		}
	case domain.EventConnect4Timeout:
		state.Expire(expired)
	case domain.EventRPSResign, domain.EventConnect4Resign:
		var f struct {
			UserID string `json:"userId"`
		}
		if err := json.Unmarshal(e.Data, &f); err != nil {
			return err
		}
		if _, err := state.Resign(f.UserID, now); err != nil {
			return fmt.Errorf("the rules refuse %s's resignation: %w", f.UserID, err)
		}
	}
	return nil
}

// checkOutcome checks the record's outcome and pot payout against the
// replayed game's.
func checkOutcome(r Record, o rules.Outcome) error {
	if !o.Done {
		return fmt.Errorf("record %d: replayed from its events, game %s has not ended", r.Index, r.GameID)
	}
	status := "completed"
	if o.Reason == "abandoned" {
		status = "cancelled"
	}
	winner := ""
	if r.Outcome.WinnerUserID != nil {
		winner = *r.Outcome.WinnerUserID
	}
	if r.Outcome.Status != status || winner != o.Winner || r.Outcome.Reason != o.Reason {
		return fmt.Errorf("record %d: game %s ended %s, won by %q on %s, by its events; the record says %s, won by %q on %s",
			r.Index, r.GameID, status, o.Winner, o.Reason, r.Outcome.Status, winner, r.Outcome.Reason)
	}
	wantPot := int64(len(r.Players))*r.StakeMinor + r.Money.DonationsMinor
	if r.StakeMinor > 0 && r.Money.PotMinor != wantPot {
		return fmt.Errorf("record %d: the pot is %d, but %d players staked %d and donors gave %d: %d",
			r.Index, r.Money.PotMinor, len(r.Players), r.StakeMinor, r.Money.DonationsMinor, wantPot)
	}
	var paid int64
	for _, p := range r.Money.Payouts {
		if p.Kind == "pot" {
			if p.UserID != o.Winner {
				return fmt.Errorf("record %d: the pot was paid to %s, not to the winner %q", r.Index, p.UserID, o.Winner)
			}
			paid += p.AmountMinor
		}
	}
	var want int64
	if o.Winner != "" && r.Money.PotMinor > 0 {
		fee := r.Money.PotMinor * feeBps / 10_000
		want = r.Money.PotMinor - fee
		if r.Money.FeeMinor != fee {
			return fmt.Errorf("record %d: the fee on a pot of %d is %d, the record says %d", r.Index, r.Money.PotMinor, fee, r.Money.FeeMinor)
		}
	}
	if paid != want {
		return fmt.Errorf("record %d: the winner's payout of the pot is %d, the record says %d", r.Index, want, paid)
	}
	return nil
}
