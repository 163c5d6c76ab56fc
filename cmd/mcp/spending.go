package main

import (
	"errors"
	"fmt"

	wager "wager.example.com/sdk"
)

// spendRefused is a money tool's call refused before anything moved.
type spendRefused struct{ reason string }

func (e *spendRefused) Error() string {
	return "SPENDING_CAP: " + e.reason + "; nothing was spent"
}

// reserve counts amount against the spending cap and returns a function
// that gives it back (when the call surely moved nothing), or a
// *spendRefused saying which limit it would break. Nothing is counted for
// an amount of 0 (a free game, a sell order).
func (s *server) reserve(what string, amount int64) (release func(), err error) {
	if amount <= 0 {
		return func() {}, nil
	}
	release, err = s.cap.Reserve(amount)
	var refused *wager.CapError
	if errors.As(err, &refused) {
		return nil, &spendRefused{fmt.Sprintf("%s of %d USDC minor units: %s", what, amount, refused.Reason)}
	}
	return release, err
}
