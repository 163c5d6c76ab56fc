package protection

import (
	"context"
	"time"
)

// Session is the reality check of a signed-in session.
type Session struct {
	StartedAt time.Time `json:"startedAt" doc:"when this session signed in: the access token's issue time, or the browser session's start"`
	Minutes   int       `json:"minutes" doc:"whole minutes since startedAt"`
	NetMinor  int64     `json:"netMinor" doc:"won (positive) or lost (negative) since startedAt: payouts, refunds, sales and redemptions less stakes, bets and market buys"`
}

// SessionOf returns the reality check of a session that signed in at
// startedAt: how long ago, and the net of the player's play since.
func (s *Service) SessionOf(ctx context.Context, userID string, startedAt time.Time) (Session, error) {
	now := s.now()
	st, err := s.state(ctx, s.db, userID, now, needs{losses: true, all: true, since: startedAt})
	if err != nil {
		return Session{}, err
	}
	var lost int64
	for _, f := range st.losses {
		lost += f.Minor
	}
	minutes := int(now.Sub(startedAt) / time.Minute)
	return Session{StartedAt: startedAt.UTC(), Minutes: max(minutes, 0), NetMinor: -lost}, nil
}

// Standing is what the pages' chrome shows of a player's protection: a
// running exclusion, whether money in is closed for another reason, and
// the reality check's interval.
type Standing struct {
	Exclusion       *Exclusion
	Underage        bool
	AgeUnconfirmed  bool // the operator requires it and the player has not given it
	Country         string
	Restricted      bool // the request's country is restricted
	ReminderMinutes int
}

// StandingOf reads what the pages show of the player's protection, for a
// request from country, in one statement without the ledger.
func (s *Service) StandingOf(ctx context.Context, userID, country string) (Standing, error) {
	now := s.now()
	st, err := s.state(ctx, s.db, userID, now, needs{})
	if err != nil {
		return Standing{}, err
	}
	return Standing{Exclusion: st.exclusion, Underage: st.Underage, AgeUnconfirmed: s.cfg.RequireAge && st.ConfirmedAt == nil,
		Country: country, Restricted: regionRule(country, s.cfg.Restricted) != nil, ReminderMinutes: st.Reminder}, nil
}

// Closed reports whether money in is closed to the player now.
func (st Standing) Closed() bool {
	return st.Exclusion != nil || st.Underage || st.Restricted
}

// StaffView is what staff read of a player's protection: never more than
// they can read, nothing they can change.
type StaffView struct {
	UserID       string      `json:"userId"`
	Limits       Limits      `json:"limits"`
	Running      *Exclusion  `json:"running" doc:"the time-out or self-exclusion running now; null: none"`
	Exclusions   []Exclusion `json:"exclusions" doc:"every one the player asked for, newest first"`
	AgeConfirmed bool        `json:"ageConfirmed"`
	Underage     bool        `json:"underage" doc:"the birth date given was below MIN_AGE: money in is refused for good"`
}

// StaffViewOf returns a player's protection for staff to read.
func (s *Service) StaffViewOf(ctx context.Context, userID string) (StaffView, error) {
	now := s.now()
	st, err := s.state(ctx, s.db, userID, now, needs{all: true})
	if err != nil {
		return StaffView{}, err
	}
	history, err := s.History(ctx, userID)
	if err != nil {
		return StaffView{}, err
	}
	return StaffView{UserID: userID, Limits: limitsOf(st, now), Running: st.exclusion, Exclusions: history,
		AgeConfirmed: st.ConfirmedAt != nil && !st.Underage, Underage: st.Underage}, nil
}

// AgeConfirmed reports whether the player confirmed an age of at least
// MIN_AGE (false for an account found underage).
func (s *Service) AgeConfirmed(ctx context.Context, userID string) (bool, error) {
	st, err := s.state(ctx, s.db, userID, s.now(), needs{})
	if err != nil {
		return false, err
	}
	return st.ConfirmedAt != nil && !st.Underage, nil
}
