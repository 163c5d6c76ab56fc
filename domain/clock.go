package domain

import "time"

// Clock returns the current time. Services take one so that tests control
// time; production uses SystemClock.
type Clock func() time.Time

// SystemClock is the wall clock in UTC.
func SystemClock() time.Time { return time.Now().UTC() }
