package views

import "time"

// DateTime writes a moment the way every page shows one, in UTC:
// "25 Nov 2026, 14:05 UTC". The <time> elements around it carry RFC 3339.
func DateTime(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") }

// Date writes a day the way every page shows one: "25 Nov 2026".
func Date(t time.Time) string { return t.UTC().Format("2 Jan 2006") }
