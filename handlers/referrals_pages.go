package handlers

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"wager/domain/money"
	"wager/domain/referrals"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// referralPages serve the referrals page and its claim.
type referralPages struct {
	referrals *referrals.Service
	header    *header.Header
}

// referralsPage shows your link, your team by level, your rewards and a
// claim button: the same service calls as GET /referrals/me, /tree and
// /rewards.
func (h *referralPages) referralsPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	ctx := c.Request().Context()
	me, err := h.referrals.Me(ctx, id.UserID)
	if err != nil {
		return err
	}
	v := views.ReferralsView{Link: me.Link, Code: me.Code, Message: c.QueryParam("done"),
		PendingWords: money.FormatUSDC(me.PendingMinor) + " USDC waiting to be claimed",
		ClaimedWords: money.FormatUSDC(me.ClaimedMinor) + " USDC claimed so far",
		CanClaim:     me.PendingMinor > 0}
	if me.ReferredBy != nil {
		v.ReferredBy = me.ReferredBy.Username
	}
	for _, l := range me.Levels {
		users, err := h.referrals.Tree(ctx, id.UserID, l.Level, 200)
		if err != nil {
			return err
		}
		level := views.ReferralLevel{Level: l.Level, Heading: levelHeading(l)}
		for _, u := range users {
			level.Users = append(level.Users, views.ReferredLine{Username: u.Username, Words: referredWords(u)})
		}
		v.Levels = append(v.Levels, level)
	}
	rewards, err := h.referrals.Rewards(ctx, id.UserID, 50, "")
	if err != nil {
		return err
	}
	for _, r := range rewards {
		v.Rewards = append(v.Rewards, views.ReferralRewardLine{GameID: r.GameID, Text: rewardWords(r)})
	}
	return web.Render(c, http.StatusOK, views.ReferralsPage(h.header.Page(c, "Referrals"), v))
}

// claimReferralsPage is the page's claim button: POST /referrals/me/claim
// for browsers, answered with the page and what happened.
func (h *referralPages) claimReferralsPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	out, err := h.referrals.Claim(c.Request().Context(), id.UserID)
	if err != nil {
		return err
	}
	done := "Nothing was waiting to be claimed."
	if out.ClaimedMinor > 0 {
		done = money.FormatUSDC(out.ClaimedMinor) + " USDC moved to your balance."
	}
	return c.Redirect(http.StatusSeeOther, "/referrals?done="+url.QueryEscape(done))
}

func levelHeading(l referrals.LevelCount) string {
	who := "people"
	if l.Users == 1 {
		who = "person"
	}
	steps := "brought in by you"
	if l.Level > 1 {
		steps = fmt.Sprintf("%d steps below you", l.Level)
	}
	return fmt.Sprintf("Level %d, %s: %d %s", l.Level, steps, l.Users, who)
}

func referredWords(u referrals.Referred) string {
	games := "no games yet"
	switch {
	case u.GamesPlayed == 1:
		games = "1 game"
	case u.GamesPlayed > 1:
		games = fmt.Sprintf("%d games", u.GamesPlayed)
	}
	return "joined " + views.Date(u.JoinedAt) + ", " + games + ", earned you " + money.FormatUSDC(u.EarnedMinor) + " USDC"
}

func rewardWords(r referrals.Reward) string {
	status := "waiting to be claimed"
	if r.Status == "claimed" {
		status = "claimed"
	}
	return fmt.Sprintf("%s USDC from %s's %s game (level %d), %s", money.FormatUSDC(r.AmountMinor), r.FromUsername,
		views.GameNameInSentence(r.GameType), r.Level, status)
}
