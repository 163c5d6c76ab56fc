package tournament

import (
	"testing"
	"time"
)

func TestFirstStartOfEachRecurrence(t *testing.T) {
	now := time.Date(2026, 12, 2, 17, 40, 10, 0, time.UTC)
	for _, c := range []struct {
		every, at string
		want      time.Time
	}{
		{Hourly, "00:15", time.Date(2026, 12, 2, 18, 15, 0, 0, time.UTC)},
		{Hourly, "09:45", time.Date(2026, 12, 2, 17, 45, 0, 0, time.UTC)},
		{Daily, "18:00", time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)},
		{Daily, "17:40", time.Date(2026, 12, 3, 17, 40, 0, 0, time.UTC)}, // a start that just passed is tomorrow's
		{Weekly, "06:30", time.Date(2026, 12, 3, 6, 30, 0, 0, time.UTC)},
	} {
		got, ok := FirstStart(c.every, c.at, now)
		if !ok || !got.Equal(c.want) {
			t.Errorf("%s at %s: %s (%v), want %s", c.every, c.at, got, ok, c.want)
		}
	}
	for _, bad := range [][2]string{{"daily", "24:00"}, {"daily", "7:00"}, {"monthly", "10:00"}, {"hourly", ""}} {
		if _, ok := FirstStart(bad[0], bad[1], now); ok {
			t.Errorf("%s at %q was taken", bad[0], bad[1])
		}
	}
}
