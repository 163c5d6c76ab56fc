package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/referrals"
	"wager/web"
)

// Referrals serves referral codes, the referral tree and its rewards.
type Referrals struct {
	Referrals *referrals.Service
}

// Routes registers your referral code, tree and rewards.
func (h *Referrals) Routes(r Router) {
	r.JSON(http.MethodGet, "/referrals/me", h.myReferrals, web.Op{Tag: "referrals", Auth: web.AuthRequired,
		Summary: "Your referral code and link, who referred you, how many users are below you per level, and your rewards",
		Description: "Share the link: a visitor who signs up through it (or gives your code as referralCode at their first login) " +
			"is at level 1 below you, the users they refer at level 2, and so on to level 3. When a staked game settles, each player's " +
			"share of the fee is half of it (the first player by seat takes the odd unit); from it their referrers earn 20%, 5% and 2% by default " +
			"(levels 1-3, rounded down) as pending rewards.",
		Response: referrals.Summary{}})
	r.JSON(http.MethodGet, "/referrals/me/tree", h.myReferralTree, web.Op{Tag: "referrals", Auth: web.AuthRequired,
		Summary: "The users at one level below you, newest first", Response: []referrals.Referred{},
		Query: []web.Param{{Name: "level", Description: "how many steps below you: 1, 2 or 3; anything else is 400", Type: "integer",
			Min: web.Bound(1), Max: web.Bound(referrals.Levels), Default: 1}, web.PageLimit}})
	r.JSON(http.MethodGet, "/referrals/me/rewards", h.myReferralRewards, web.Op{Tag: "referrals", Auth: web.AuthRequired,
		Summary: "Your referral rewards, newest first", Response: []referrals.Reward{},
		Query: []web.Param{web.PageLimit, web.PageBefore("the id of the previous page's last reward")}})
	r.JSON(http.MethodPost, "/referrals/me/claim", h.claimReferralRewards, web.Op{Tag: "referrals", Auth: web.AuthRequired,
		Summary:     "Move all your pending rewards to your available balance",
		Description: "All at once; claims sent at the same time pay once. Nothing pending answers claimedMinor 0.",
		Response:    referrals.Claimed{}})
}

func (h *Referrals) myReferrals(c echo.Context) error {
	out, err := h.Referrals.Me(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// treeLevel reads ?level= (default 1) into v's checks.
func treeLevel(v domain.Validator, c echo.Context) int {
	s := c.QueryParam("level")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	v.Check(err == nil && referrals.CheckLevel(n) == nil, "level", "must be 1, 2 or 3")
	return n
}

func (h *Referrals) myReferralTree(c echo.Context) error {
	v := domain.Validator{}
	level, limit := treeLevel(v, c), pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	out, err := h.Referrals.Tree(c.Request().Context(), web.IdentityOf(c).UserID, level, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Referrals) myReferralRewards(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	out, err := h.Referrals.Rewards(c.Request().Context(), web.IdentityOf(c).UserID, limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Referrals) claimReferralRewards(c echo.Context) error {
	out, err := h.Referrals.Claim(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
