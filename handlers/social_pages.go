package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/social"
	"wager/domain/tips"
	"wager/domain/users"
	"wager/views"
	"wager/web"
)

// socialPages serve the notifications, friends and me pages.
type socialPages struct {
	users  *users.Service
	notify *notify.Service
	social *social.Service
	chrome *chrome
}

// bellLatest is how many notifications the header's bell lists.
const bellLatest = 5

// bellFor reads the header's bell of a signed-in user.
func (h *chrome) bellFor(c echo.Context, userID string) views.Bell {
	p, err := h.notify.List(c.Request().Context(), userID, false, bellLatest, 0)
	if err != nil {
		h.log.Warn("page header: read the notifications", "user", userID, "err", err)
		return views.Bell{}
	}
	b := views.Bell{Unread: p.Unread}
	for _, n := range p.Items {
		b.Latest = append(b.Latest, notificationLine(n))
	}
	return b
}

// noticeData is what the notifications' data carry, all types together:
// each type fills its own members (see notify's callers).
type noticeData struct {
	UserID        string `json:"userId"`
	Username      string `json:"username"`
	FromUsername  string `json:"fromUsername"`
	GameID        string `json:"gameId"`
	GameType      string `json:"gameType"`
	StakeMinor    int64  `json:"stakeMinor"`
	Outcome       string `json:"outcome"`
	ReceivedMinor int64  `json:"receivedMinor"`
	Name          string `json:"name"`
	TicketID      string `json:"ticketId"`
	Subject       string `json:"subject"`
	AmountMinor   int64  `json:"amountMinor"`
	Level         int    `json:"level"`
	// bet_settled and market_resolved
	Status          string `json:"status"`
	PayoutMinor     int64  `json:"payoutMinor"`
	RedeemableMinor int64  `json:"redeemableMinor"`
	WinnerID        string `json:"winnerId"`
	Reason          string `json:"reason"`
}

// notificationLine says a notification in one sentence, with where it
// leads.
func notificationLine(n notify.Notification) views.NotificationLine {
	l := views.NotificationLine{ID: n.ID, Read: n.Read, At: n.CreatedAt, Href: "/notifications"}
	var d noticeData
	_ = json.Unmarshal(n.Data, &d) // a type's missing members stay empty
	game := views.GameNameInSentence(d.GameType)
	switch n.Type {
	case notify.FriendRequest:
		l.Text, l.Href = d.Username+" asked to be your friend.", "/friends"
	case notify.FriendAccepted:
		l.Text, l.Href = d.Username+" accepted your friend request.", "/u/"+url.PathEscape(d.Username)
	case notify.Challenge:
		l.Text, l.Href = d.FromUsername+" challenged you to "+game+stakeWords(d.StakeMinor)+".", "/play"
	case notify.GameCompleted:
		l.Href = "/game/" + d.GameID
		switch d.Outcome {
		case "won":
			l.Text = "You won the " + game + " game" + receivedWords(d.ReceivedMinor) + "."
		case "lost":
			l.Text = "You lost the " + game + " game."
		case "draw":
			l.Text = "The " + game + " game was a draw" + refundWords(d.ReceivedMinor) + "."
		default:
			l.Text = "The " + game + " game was cancelled" + refundWords(d.ReceivedMinor) + "."
		}
	case notify.Achievement:
		l.Text, l.Href = "Achievement unlocked: "+d.Name+".", "/me"
	case notify.SupportReply:
		l.Text, l.Href = "Support answered your ticket: "+d.Subject+".", "/support/tickets/"+url.PathEscape(d.TicketID)
	case notify.Tip:
		var tip tips.Notice
		_ = json.Unmarshal(n.Data, &tip)
		l.Text = tip.From.Username + " tipped you " + money.FormatUSDC(tip.AmountMinor) + " USDC."
		l.Href = "/u/" + url.PathEscape(tip.From.Username)
		if tip.Context != nil && tip.Context.Type == "game" {
			l.Href = "/game/" + tip.Context.ID
		}
	case notify.ReferralReward:
		l.Text, l.Href = "You earned "+money.FormatUSDC(d.AmountMinor)+" USDC from a game of someone you referred.", "/referrals"
	case notify.ReviewHold:
		l.Text, l.Href = "A game you bet on or traded ended "+holdReasonWords(d.Reason)+" and is held for review: "+
			"an admin will pay your bets and shares as the game ended, or refund them.", "/game/"+d.GameID
	case notify.BetSettled:
		l.Href = "/game/" + d.GameID
		bet := "Your bet of " + money.USDC(d.AmountMinor)
		switch d.Status {
		case "won":
			l.Text = bet + " won: " + money.USDC(d.PayoutMinor) + " paid to your balance."
		case "lost":
			l.Text = bet + " lost: the player you backed did not win."
		default:
			l.Text = bet + " was refunded to your balance."
		}
	case notify.MarketResolved:
		l.Href = "/game/" + d.GameID
		if d.WinnerID == "" {
			l.Text = "A game you traded ended without a winner: your shares redeem for " + money.USDC(d.RedeemableMinor) + "."
		} else {
			l.Text = "A game you traded ended: your shares redeem for " + money.USDC(d.RedeemableMinor) + "."
		}
	case notify.TournamentStarting, notify.TournamentPrize:
		l = tournamentNotificationLine(l, n)
	default:
		// A type this page does not know yet still reads as a sentence and
		// leads to the list, which has its date.
		l.Text = "You have a new notification."
	}
	return l
}

// holdReasonWords says why a game's end was held for review.
func holdReasonWords(reason string) string {
	switch reason {
	case "resign":
		return "by resignation"
	case "timeout":
		return "on time"
	}
	return "early"
}

func stakeWords(stake int64) string {
	if stake == 0 {
		return ", a free game"
	}
	return " for " + money.FormatUSDC(stake) + " USDC"
}

func receivedWords(minor int64) string {
	if minor == 0 {
		return ""
	}
	return " and received " + money.FormatUSDC(minor) + " USDC"
}

func refundWords(minor int64) string {
	if minor == 0 {
		return ""
	}
	return ": your " + money.FormatUSDC(minor) + " USDC stake came back"
}

// feedLine says an activity entry in one sentence, with where it leads.
func feedLine(e social.Entry) views.FeedLine {
	l := views.FeedLine{ID: e.ID, At: e.CreatedAt, Href: "/u/" + url.PathEscape(e.Actor.Username)}
	who := e.Actor.Username
	switch e.Type {
	case social.ActivityGameWon:
		var d social.GameWon
		_ = json.Unmarshal(e.Data, &d)
		l.Href = "/game/" + d.GameID
		l.Text = who + " beat " + d.Loser.Username + " at " + views.GameNameInSentence(d.GameType)
		if d.PayoutMinor > 0 {
			l.Text += " and won " + money.FormatUSDC(d.PayoutMinor) + " USDC"
		}
		l.Text += "."
	case social.ActivityDonation:
		var d social.Donated
		_ = json.Unmarshal(e.Data, &d)
		l.Href = "/game/" + d.GameID
		l.Text = who + " donated " + money.FormatUSDC(d.AmountMinor) + " USDC to a game's pot."
	case social.ActivityTip:
		var d social.Tipped
		_ = json.Unmarshal(e.Data, &d)
		l.Text = who + " tipped " + d.To.Username + " " + money.FormatUSDC(d.AmountMinor) + " USDC."
	case social.ActivityAchievement:
		var d social.AchievementNotice
		_ = json.Unmarshal(e.Data, &d)
		l.Text = who + " unlocked " + d.Name + "."
	case social.ActivityBetWon:
		var d social.BetWonData
		_ = json.Unmarshal(e.Data, &d)
		l.Href = "/game/" + d.GameID
		l.Text = who + " won " + money.USDC(d.PayoutMinor) + " on a bet."
	case social.ActivityTournamentWon:
		l = tournamentWonLine(l, e)
	default:
		l.Text = who + " did something new."
	}
	return l
}

// feedOnHome is how many entries the home page's feed shows.
const feedOnHome = 12

// notificationsPage lists the user's notifications, ?before=<id> for
// older ones.
func (h *socialPages) notificationsPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	before, _ := strconv.ParseInt(c.QueryParam("before"), 10, 64)
	const pageSize = 30
	p, err := h.notify.List(c.Request().Context(), id.UserID, false, pageSize, before)
	if err != nil {
		return err
	}
	v := views.NotificationsView{Unread: p.Unread}
	for _, n := range p.Items {
		v.Items = append(v.Items, notificationLine(n))
	}
	if len(p.Items) == pageSize {
		v.Older = p.Items[len(p.Items)-1].ID
	}
	return web.Render(c, http.StatusOK, views.NotificationsPage(h.chrome.pageFor(c, "Notifications"), v))
}

// notificationsRead marks one notification read (:id) or all of them, and
// goes back to the list.
func (h *socialPages) notificationsRead(all bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := web.IdentityOf(c)
		if id == nil {
			return domain.Errorf(domain.CodeUnauthorized, "sign in to read your notifications")
		}
		ctx := c.Request().Context()
		if all {
			if _, err := h.notify.ReadAll(ctx, id.UserID); err != nil {
				return err
			}
		} else {
			n, err := strconv.ParseInt(c.Param("id"), 10, 64)
			if err != nil {
				return domain.Errorf(domain.CodeNotFound, "no such notification")
			}
			if _, err := h.notify.MarkRead(ctx, id.UserID, n); err != nil {
				return err
			}
		}
		return c.Redirect(http.StatusSeeOther, "/notifications")
	}
}

// friendsPage shows the user's friends, the requests waiting for them,
// and people found by ?q= (a username prefix).
func (h *socialPages) friendsPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	v, err := h.friendsView(c, id.UserID, c.QueryParam("q"))
	if err != nil {
		return err
	}
	v.Message = c.QueryParam("done")
	return web.Render(c, http.StatusOK, views.FriendsPage(h.chrome.pageFor(c, "Friends"), v))
}

func (h *socialPages) friendsView(c echo.Context, me, search string) (views.FriendsView, error) {
	ctx := c.Request().Context()
	v := views.FriendsView{Search: strings.TrimSpace(search)}
	friends, err := h.social.Friends(ctx, me, 200, "")
	if err != nil {
		return v, err
	}
	for _, f := range friends {
		l := views.FriendLine{UserID: f.UserID, Username: f.Username, Online: f.Online}
		if f.CurrentGameID != nil {
			l.GameID = *f.CurrentGameID
		}
		v.Friends = append(v.Friends, l)
	}
	incoming, err := h.social.IncomingRequests(ctx, me, 200)
	if err != nil {
		return v, err
	}
	for _, r := range incoming {
		v.Incoming = append(v.Incoming, views.RequestLine{UserID: r.UserID, Username: r.Username})
	}
	if v.Search != "" {
		found, err := h.users.Search(ctx, v.Search)
		if err != nil && domain.ErrorCode(err) != domain.CodeValidation {
			return v, err
		}
		for _, u := range found {
			if u.ID != me {
				v.Found = append(v.Found, views.RequestLine{UserID: u.ID, Username: u.Username})
			}
		}
	}
	return v, nil
}

// friendsAction answers the friends page's buttons: ask, accept, remove.
// The page comes back saying what happened, or why not.
func (h *socialPages) friendsAction(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := web.IdentityOf(c)
		if id == nil {
			return domain.Errorf(domain.CodeUnauthorized, "sign in to manage your friends")
		}
		ctx, other := c.Request().Context(), c.Param("id")
		var err error
		done := ""
		switch action {
		case "ask":
			var r social.Relation
			if r, _, err = h.social.Request(ctx, id.UserID, other); err == nil {
				done = "Request sent: they will see it in their notifications."
				if r.Status == social.StatusFriends {
					done = "You are friends now."
				}
			}
		case "accept":
			if _, err = h.social.Accept(ctx, id.UserID, other); err == nil {
				done = "You are friends now."
			}
		default:
			if err = h.social.Remove(ctx, id.UserID, other); err == nil {
				done = "Done: you are no longer connected."
			}
		}
		if err != nil {
			e := web.AsError(err)
			if e.Code == domain.CodeInternal {
				return err
			}
			done = sentence(e.Message)
		}
		return c.Redirect(http.StatusSeeOther, "/friends?done="+url.QueryEscape(done))
	}
}

// mePage sends a signed-in user to their own profile.
func (h *socialPages) mePage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/u/"+url.PathEscape(id.Username))
}
