package livepage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"wager/domain"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/social"
	"wager/domain/tournament"
	"wager/views"
	"wager/web/live"
)

// Tournaments renders tournament events for the arena pages, from the
// events' data alone (live.TournamentPages).
type Tournaments struct{ log *slog.Logger }

// NewTournaments returns the renderer of tournament events.
func NewTournaments(log *slog.Logger) *Tournaments { return &Tournaments{log: log} }

// Open is live.Kind's Open of tournaments' rooms: their pages render each
// event from the event alone (TournamentEvents).
func (v *Tournaments) Open(_ context.Context, id string) (live.PageState, error) {
	return live.Stateless(func(evs []live.Event) [][]byte { return v.TournamentEvents(context.Background(), id, evs) }), nil
}

// TournamentEvents renders a tournament's events for its pages: standings
// swap the standings and the games in progress; the start, the
// cancellation and the end swap the status and the clock (the end the
// prizes and final standings too); a pairing shows nothing of its own (the
// next standings do).
func (v *Tournaments) TournamentEvents(ctx context.Context, id string, evs []live.Event) [][]byte {
	out := make([][]byte, len(evs))
	for i, ev := range evs {
		var l views.ArenaLive
		var standings, status bool
		switch ev.Name {
		case domain.EventTournamentStandings:
			var d tournament.Standings
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				v.log.Warn("render tournament standings", "tournament", id, "seq", ev.Seq, "err", err)
				continue
			}
			l, standings = ArenaLive(d.Status, ev.Seq, d.PlayerCount, d.MaxPlayers, d.PrizePoolMinor, d.Standings, nil), true
		case domain.EventTournamentStarted:
			var d tournament.Started
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				continue
			}
			l, status = views.ArenaLive{Seq: ev.Seq, Status: tournament.StatusRunning, StartsAt: d.StartsAt, EndsAt: d.EndsAt}, true
		case domain.EventTournamentCancelled:
			var d tournament.Cancelled
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				continue
			}
			l, status = views.ArenaLive{Seq: ev.Seq, Status: tournament.StatusCancelled, Note: d.Reason}, true
		case domain.EventTournamentFinished:
			var d tournament.Finished
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				continue
			}
			l = ArenaLive(tournament.StatusFinished, ev.Seq, len(d.Standings), 0, 0, d.Standings, d.Prizes)
			l.More = 0
			status, standings = true, true
		default:
			var buf bytes.Buffer
			views.ArenaSeq(ev.Seq).Render(ctx, &buf)
			out[i] = buf.Bytes()
			continue
		}
		var buf bytes.Buffer
		if err := views.ArenaLiveFragment(l, standings, status).Render(ctx, &buf); err != nil {
			v.log.Warn("render a tournament event", "tournament", id, "event", ev.Name, "err", err)
			continue
		}
		out[i] = buf.Bytes()
	}
	return out
}

// ArenaLive is what the arena page's live panels show, on the page and in
// its live events.
func ArenaLive(status string, seq, players, maxPlayers int, pool int64, st []tournament.Standing, prizes []tournament.Prize) views.ArenaLive {
	l := views.ArenaLive{Seq: seq, Status: status, PlayerCount: players, MaxPlayers: maxPlayers}
	if pool > 0 {
		l.Pool = money.FormatUSDC(pool) + " USDC"
	}
	games := map[string][]string{}
	var order []string
	for i, s := range st {
		if i >= tournament.StandingsRows {
			break
		}
		line := views.ArenaLine{Rank: s.Rank, UserID: s.UserID, Username: s.Username, Score: s.Score, Games: s.Games,
			Record: recordWords(s), OnFire: s.OnFire, Paused: s.Paused, Bot: s.Bot, Berserks: s.Berserks, PausedReason: Deref(s.PausedReason)}
		if s.CurrentGameID != nil {
			line.GameID = *s.CurrentGameID
			if games[line.GameID] == nil {
				order = append(order, line.GameID)
			}
			games[line.GameID] = append(games[line.GameID], s.Username)
		}
		l.Standings = append(l.Standings, line)
	}
	l.More = max(players-len(l.Standings), 0)
	for _, id := range order {
		l.Games = append(l.Games, views.ArenaGame{GameID: id, Players: strings.Join(games[id], " v ")})
	}
	for _, p := range prizes {
		l.Prizes = append(l.Prizes, views.ArenaPrize{Rank: p.Rank, Username: p.Username, Paid: money.FormatUSDC(p.AmountMinor)})
	}
	return l
}

func recordWords(s tournament.Standing) string {
	if s.Games == 0 {
		return "no games yet"
	}
	return fmt.Sprintf("%d won, %d drawn, %d lost", s.Wins, s.Draws, s.Losses)
}

// tournamentNotificationLine says a tournament's notification in a
// sentence that leads to its page.
func tournamentNotificationLine(l views.NotificationLine, n notify.Notification) views.NotificationLine {
	switch n.Type {
	case notify.TournamentStarting:
		var d tournament.StartingNotice
		_ = json.Unmarshal(n.Data, &d)
		l.Text, l.Href = "The arena "+d.Name+" starts in a minute: keep its page open to play.", "/arenas/"+d.TournamentID
	case notify.TournamentPrize:
		var d tournament.PrizeNotice
		_ = json.Unmarshal(n.Data, &d)
		l.Text = "You finished " + ordinal(d.Rank) + " of " + strconv.Itoa(d.Players) + " in the arena " + d.Name + " and won " +
			money.USDC(d.AmountMinor) + "."
		l.Href = "/arenas/" + d.TournamentID
	}
	return l
}

// tournamentWonLine says a tournament_won feed entry.
func tournamentWonLine(l views.FeedLine, e social.Entry) views.FeedLine {
	var d social.TournamentWon
	_ = json.Unmarshal(e.Data, &d)
	l.Href = "/arenas/" + d.TournamentID
	l.Text = e.Actor.Username + " won the arena " + d.Name + " (" + strconv.Itoa(d.Players) + " players)"
	if d.PrizeMinor > 0 {
		l.Text += " and " + money.USDC(d.PrizeMinor)
	}
	l.Text += "."
	return l
}

// ordinal writes a place: 1st, 2nd, 3rd, 4th, 11th, 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
