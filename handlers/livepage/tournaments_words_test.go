package livepage

import (
	"encoding/json"
	"testing"

	"wager/domain/notify"
	"wager/domain/social"
	"wager/domain/tournament"
)

// A tournament's notifications and feed entry read as sentences that lead
// to its page.
func TestTournamentNotificationsReadRight(t *testing.T) {
	data := func(v any) json.RawMessage {
		b, _ := json.Marshal(v)
		return b
	}
	for _, c := range []struct {
		typ        string
		data       any
		text, href string
	}{
		{notify.TournamentStarting, tournament.StartingNotice{TournamentID: "t1", Name: "Night arena"},
			"The arena Night arena starts in a minute: keep its page open to play.", "/arenas/t1"},
		{notify.TournamentPrize, tournament.PrizeNotice{TournamentID: "t1", Name: "Night arena", Rank: 2, Players: 12, AmountMinor: 1_188_000},
			"You finished 2nd of 12 in the arena Night arena and won 1.188 USDC.", "/arenas/t1"},
	} {
		l := NotificationLine(notify.Notification{Type: c.typ, Data: data(c.data)})
		if l.Text != c.text || l.Href != c.href {
			t.Errorf("%s: %q -> %s, want %q -> %s", c.typ, l.Text, l.Href, c.text, c.href)
		}
	}
	l := FeedLine(social.Entry{Type: social.ActivityTournamentWon, Actor: social.UserRef{UserID: "id-ann", Username: "ann"},
		Data: data(social.TournamentWon{TournamentID: "t1", Name: "Night arena", Players: 12, PrizeMinor: 1_980_000})})
	if want := "ann won the arena Night arena (12 players) and 1.98 USDC."; l.Text != want || l.Href != "/arenas/t1" {
		t.Errorf("tournament_won: %q -> %s, want %q", l.Text, l.Href, want)
	}
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %s, want %s", n, got, want)
		}
	}
}
