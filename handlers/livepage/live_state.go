package livepage

import (
	"encoding/json"
	"fmt"
	"slices"

	"wager/domain"
	"wager/domain/game"
	"wager/domain/integrity"
	"wager/domain/settlement"
	"wager/web/live"
)

// apply takes in one of the game's events, so that the state is what
// reading the game again would give (for what the page shows everyone):
// each event sets what it is about to what it says, so that an event the
// state read already included changes nothing. Chat and market events are
// the pages' without a state; other events change nothing it keeps. An
// error (data that does not decode) leaves the state in doubt.
func (s *gameState) apply(ev live.Event) error {
	var err error
	switch ev.Name {
	case domain.EventGameResumed:
		var d game.Resumed
		if err = decodeEvent(ev, &d); err == nil {
			s.view.Base().SetDeadline(d.Deadline)
		}
	case domain.EventGameCompleted:
		var d game.Completed
		if err = decodeEvent(ev, &d); err == nil {
			s.completed(d)
		}
	case domain.EventPot:
		err = decodeEvent(ev, &s.pot)
	case domain.EventBet:
		var d settlement.BetPlaced
		if err = decodeEvent(ev, &d); err == nil && s.bets != nil {
			s.bets.TotalMinor, s.bets.Pools = d.TotalMinor, d.Pools
		}
	case domain.EventReview:
		var d integrity.Decided
		if err = decodeEvent(ev, &d); err == nil {
			s.review = &d.Review
			s.betsHeld = s.betsHeld && d.Status == integrity.StatusHeld
			s.queued(d.GameID, d.Transfers)
		}
	case domain.EventSettlementTransfer:
		var d settlement.TransferSent
		if err = decodeEvent(ev, &d); err == nil {
			s.transferSent(d)
		}
	case domain.EventRematchRequested, domain.EventRematchCancelled, domain.EventRematchStarted:
		err = s.rematchEvent(ev)
	default:
		if err = s.view.Apply(ev.Name, ev.Data); err == nil && s.bets != nil && slices.Contains(settlement.BettingClosers, ev.Name) {
			s.bets.Open = false
		}
	}
	return err
}

// completed is the game's end: its result, what it did to the ratings,
// the transfers its settlement queued, and its bets closed (and held when
// its end was).
func (s *gameState) completed(d game.Completed) {
	res := d.Result
	s.meta.Status, s.meta.Result, s.meta.WinnerID = d.Status, &res, d.WinnerID
	s.view.Base().Status = d.Status
	s.ratings = d.Ratings
	s.transfers = nil
	s.queued(d.GameID, d.Transfers)
	s.rematch = &game.Rematch{GameID: d.GameID, RequestedBy: []string{}, Status: "none"}
	s.review = nil
	if d.ReviewHeld {
		s.review = &integrity.Review{GameID: d.GameID, Status: integrity.StatusHeld, WinnerID: Deref(d.WinnerID), Reason: d.ReviewReason}
	}
	if s.bets != nil {
		s.bets.Open = false
		s.betsHeld = d.ReviewHeld && s.bets.TotalMinor > 0
	}
}

// queued are settlement transfers just queued, pending (an event that
// repeats what the state read already holds changes nothing).
func (s *gameState) queued(gameID string, ts []game.SettlementTransfer) {
	for _, t := range ts {
		if !slices.ContainsFunc(s.transfers, func(have settlement.Transfer) bool { return have.ID == t.ID }) {
			s.transfers = append(s.transfers, settlement.Transfer{ID: t.ID, GameID: gameID, Kind: t.Kind, ToAddress: t.ToAddress,
				AmountMinor: t.AmountMinor, Status: "pending"})
		}
	}
}

// transferSent is a settlement transfer confirmed on chain: the one the
// settlement queued, or one queued since (a late donation's refund).
func (s *gameState) transferSent(d settlement.TransferSent) {
	i := slices.IndexFunc(s.transfers, func(t settlement.Transfer) bool { return d.ID != "" && t.ID == d.ID })
	if i < 0 {
		s.transfers = append(s.transfers, settlement.Transfer{ID: d.ID})
		i = len(s.transfers) - 1
	}
	t := &s.transfers[i]
	t.Kind, t.ToAddress, t.AmountMinor, t.Status, t.Signature = d.Kind, d.ToAddress, d.AmountMinor, "confirmed", &d.Signature
}

// rematchEvent is a player's request for a rematch, its withdrawal, or
// the rematch's start.
func (s *gameState) rematchEvent(ev live.Event) error {
	if s.rematch == nil {
		s.rematch = &game.Rematch{GameID: s.meta.GameID, RequestedBy: []string{}, Status: "none"}
	}
	r := s.rematch
	if ev.Name == domain.EventRematchStarted {
		var d game.RematchStarted
		if err := decodeEvent(ev, &d); err != nil {
			return err
		}
		r.Status, r.NewGameID = "started", &d.NewGameID
		return nil
	}
	var d game.RematchBy
	if err := decodeEvent(ev, &d); err != nil {
		return err
	}
	r.RequestedBy = slices.DeleteFunc(r.RequestedBy, func(id string) bool { return id == d.UserID })
	if ev.Name == domain.EventRematchRequested {
		r.RequestedBy = append(r.RequestedBy, d.UserID)
	}
	if r.Status != "started" {
		r.Status = "none"
		if len(r.RequestedBy) > 0 {
			r.Status = "requested"
		}
	}
	return nil
}

func decodeEvent(ev live.Event, v any) error {
	if err := json.Unmarshal(ev.Data, v); err != nil {
		return fmt.Errorf("decode %s (seq %d): %w", ev.Name, ev.Seq, err)
	}
	return nil
}
