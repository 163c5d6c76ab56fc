package livepage

import (
	"encoding/json"
	"net/url"

	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/social"
	"wager/domain/tips"
	"wager/views"
)

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

// NotificationLine says a notification in one sentence, with where it
// leads.
func NotificationLine(n notify.Notification) views.NotificationLine {
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

// FeedLine says an activity entry in one sentence, with where it leads.
func FeedLine(e social.Entry) views.FeedLine {
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
