package livepage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/a-h/templ"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/social"
	"wager/views"
	"wager/web/live"
)

// Open implements live.Pages: it reads what the game page shows, as
// everyone may see it, once for a room's pages (gameState).
func (v *Games) Open(ctx context.Context, gameID string) (live.PageState, error) {
	st, err := v.readGame(ctx, gameID)
	if err != nil {
		return nil, err
	}
	return &livePage{views: v, id: gameID, seq: st.meta.LastSeq, game: st}, nil
}

// livePage is a room's pages' state (live.PageState): the game as the
// page shows it to everyone, as of seq, kept up to date by the room's
// events alone.
type livePage struct {
	views *Games
	id    string

	mu   sync.Mutex
	seq  int
	game gameState
}

// Seq implements live.PageState.
func (p *livePage) Seq() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

// Events implements live.PageState: a chat message is appended to the
// chat, a market event swaps the market's panel, from the event alone;
// any other event swaps every panel it may change, rendered once for the
// batch (at its last such event) from the game as the events left it.
// An event it cannot take in (a gap, data that does not decode) makes it
// answer false: the pages join again, and the game is read again.
func (p *livePage) Events(evs []live.Event) ([][]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range evs {
		if ev.Seq <= p.seq {
			continue
		}
		if ev.Seq != p.seq+1 {
			return nil, false
		}
		if err := p.game.apply(ev); err != nil {
			p.views.log.Warn("follow a game's events for its pages", "game", p.id, "seq", ev.Seq, "event", ev.Name, "err", err)
			return nil, false
		}
		p.seq = ev.Seq
	}
	ctx := context.Background()
	out := make([][]byte, len(evs))
	last := -1
	for i, ev := range evs {
		switch ev.Name {
		case domain.EventMarket:
			out[i] = p.views.marketEvent(ctx, p.id, ev)
		case domain.EventChatMessage:
			out[i] = p.views.chatEvent(ctx, p.id, ev)
		default:
			last = i
		}
	}
	if last < 0 {
		return out, true
	}
	g := p.views.present(&p.game, nil)
	g.Seq = evs[last].Seq
	var buf bytes.Buffer
	if err := views.Live(g).Render(ctx, &buf); err != nil {
		p.views.log.Warn("render live event", "game", p.id, "event", evs[last].Name, "err", err)
		return out, true
	}
	out[last] = buf.Bytes()
	return out, true
}

// Spectators implements live.LatePages: a game's late spectators get its
// chat and its pot at once (the chat line; the pot's panel as it stands
// now), and after the delay the rest without them (the seq alone for a
// chat message; the live panels but the pot's, as of the events, or the
// seq alone when the state is already past them).
func (p *livePage) Spectators(evs []live.Event) (ahead, late [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx := context.Background()
	ahead, late = make([][]byte, len(evs)), make([][]byte, len(evs))
	lastPot, last := -1, -1
	for i, ev := range evs {
		switch {
		case ev.Name == domain.EventChatMessage:
			ahead[i] = p.views.chatLine(ctx, p.id, ev)
			late[i] = render(ctx, views.LiveSeq(ev.Seq))
		case ev.Name == domain.EventMarket:
		default:
			if domain.NeverLate(ev.Name) {
				lastPot = i
			}
			last = i
		}
	}
	if lastPot < 0 && last < 0 {
		return ahead, late
	}
	g := p.views.present(&p.game, nil)
	if lastPot >= 0 {
		ahead[lastPot] = render(ctx, views.PotPanel(g))
	}
	switch {
	case last < 0:
	case p.seq > evs[last].Seq:
		// The state is newer than these events (a join's catch-up): the
		// board it shows is not due with them.
		late[last] = render(ctx, views.LiveSeq(evs[last].Seq))
	default:
		g.Seq = evs[last].Seq
		late[last] = render(ctx, views.LiveLate(g))
	}
	return ahead, late
}

// render renders a fragment, nil when it fails.
func render(ctx context.Context, c templ.Component) []byte {
	var buf bytes.Buffer
	if err := c.Render(ctx, &buf); err != nil {
		return nil
	}
	return buf.Bytes()
}

// chatLine renders a chat message from its event alone, nil when its
// data does not decode.
func (v *Games) chatLine(ctx context.Context, gameID string, ev live.Event) []byte {
	var m chat.Message
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		v.log.Warn("render a live chat message", "game", gameID, "seq", ev.Seq, "err", err)
		return nil
	}
	return render(ctx, views.ChatAppend(ChatLine(m)))
}

// chatEvent renders a chat message from its event alone, with its seq.
func (v *Games) chatEvent(ctx context.Context, gameID string, ev live.Event) []byte {
	line := v.chatLine(ctx, gameID, ev)
	if line == nil {
		return nil
	}
	return append(line, render(ctx, views.LiveSeq(ev.Seq))...)
}

// marketEvent renders a game:market event from its data alone: the market
// changes with every order, and its panel needs nothing the event lacks.
func (v *Games) marketEvent(ctx context.Context, gameID string, ev live.Event) []byte {
	var m market.View
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		v.log.Warn("render a live market event", "game", gameID, "seq", ev.Seq, "err", err)
		return nil
	}
	var buf bytes.Buffer
	views.MarketPanel(*MarketView(m)).Render(ctx, &buf)
	views.LiveSeq(ev.Seq).Render(ctx, &buf)
	return buf.Bytes()
}

// Crowd implements live.Pages.
func (v *Games) Crowd(count int) []byte {
	var buf bytes.Buffer
	views.SpectatorCount(count).Render(context.Background(), &buf)
	return buf.Bytes()
}

// Notice implements live.Pages: a new balance replaces the header's
// (views.NavBalance, out of band, on whatever page the user has open).
// Other notices show nothing on pages yet.
func (v *Games) Notice(kind domain.NoticeKind, data json.RawMessage) []byte {
	var c templ.Component
	switch kind {
	case domain.NoticeBalance:
		var b money.PlatformBalance
		if err := json.Unmarshal(data, &b); err != nil {
			v.log.Warn("render a balance notice", "err", err)
			return nil
		}
		c = views.NavBalance(b.AvailableMinor, true, true)
	case domain.NoticeNotification:
		var n notify.Pushed
		if err := json.Unmarshal(data, &n); err != nil {
			v.log.Warn("render a notification notice", "err", err)
			return nil
		}
		c = views.BellPush(n.UnreadCount, NotificationLine(n.Notification))
	case domain.NoticeActivity:
		var e social.Entry
		if err := json.Unmarshal(data, &e); err != nil {
			v.log.Warn("render an activity notice", "err", err)
			return nil
		}
		c = views.FeedPush(FeedLine(e))
	default:
		return nil
	}
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		v.log.Warn("render a notice", "kind", kind, "err", err)
		return nil
	}
	return buf.Bytes()
}

// Join is live.Kind's Join of games' rooms: the state of an active game and whether the
// user plays in it (NOT_FOUND); a game no longer active answers its seq and GAME_NOT_ACTIVE
// as Ended. The game is read afresh when the instance's copy is older than atLeast.
func (v *Games) Join(ctx context.Context, gameID, userID string, atLeast int) (live.Joined, error) {
	g, err := v.games.GameAtLeast(ctx, gameID, atLeast)
	if err != nil {
		return live.Joined{}, err
	}
	player := slices.Contains(g.Players, userID)
	view, err := v.games.ActiveState(g)
	if domain.ErrorCode(err) == domain.CodeGameNotActive {
		return live.Joined{Seq: g.Seq, Player: player, Ended: err}, nil
	}
	if err != nil {
		return live.Joined{}, err
	}
	seq, delay := g.Seq, v.games.SpectatorDelay(g)
	if !player && delay > 0 {
		if view, err = v.games.SpectatorState(ctx, g); err != nil {
			return live.Joined{}, err
		}
		seq = view.Base().Seq
	}
	state, err := json.Marshal(view)
	if err != nil {
		return live.Joined{}, fmt.Errorf("encode the state of game %s: %w", g.ID, err)
	}
	return live.Joined{State: state, Seq: seq, Player: player, Delay: delay, Latest: g.Seq}, nil
}
