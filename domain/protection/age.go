package protection

import (
	"context"
	"fmt"
	"time"

	"wager/db"
	"wager/domain"
)

// AgeRequest is the birth date a player gives.
type AgeRequest struct {
	BirthDate string `json:"birthDate" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}$" doc:"YYYY-MM-DD"`
}

// AgeConfirmation is the answer to a confirmed age.
type AgeConfirmation struct {
	AgeConfirmed bool `json:"ageConfirmed"`
}

// ConfirmAge records the player's birth date. Old enough (MIN_AGE): the
// age is confirmed. Younger: UNDERAGE, and the account is marked so for
// good: it is refused on every money-in path from then on, whatever it
// sends later. A date that is not a real date, lies ahead or before 1900
// is VALIDATION_ERROR. An age confirmed before stays as it was.
func (s *Service) ConfirmAge(ctx context.Context, userID, birthDate string) (AgeConfirmation, error) {
	born, err := time.Parse(time.DateOnly, birthDate)
	now := s.now().UTC()
	if err != nil || born.Year() < 1900 || born.After(now) {
		return AgeConfirmation{}, domain.Invalid(map[string]string{"birthDate": "must be your date of birth as YYYY-MM-DD"})
	}
	adult := !born.AddDate(s.cfg.MinAge, 0, 0).After(now)
	var underage bool
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if err := lockProtection(ctx, tx, userID, now); err != nil {
			return err
		}
		// An account found underage stays so; a confirmed one keeps its
		// date. A later answer changes neither, except that a date below
		// the minimum age always marks the account.
		return tx.QueryRowContext(ctx, `UPDATE player_protection SET
				underage = underage OR NOT ?,
				birth_date = CASE WHEN age_confirmed_at IS NULL OR NOT ? THEN ?::date ELSE birth_date END,
				age_confirmed_at = CASE WHEN ? AND NOT underage THEN coalesce(age_confirmed_at, ?) ELSE age_confirmed_at END,
				updated_at = ?
			WHERE user_id = ? RETURNING underage`, adult, adult, birthDate, adult, now, now, userID).Scan(&underage)
	})
	if err != nil {
		return AgeConfirmation{}, fmt.Errorf("confirm the age of %s: %w", userID, err)
	}
	if underage {
		return AgeConfirmation{}, underageRule(&state{Underage: true}, s.cfg.MinAge)
	}
	return AgeConfirmation{AgeConfirmed: true}, nil
}
