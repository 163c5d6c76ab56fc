package protection

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/money"
)

// FormatTime writes a time as every refusal and page of player protection
// shows it ("26 Nov 2026, 14:05 UTC"), rounded up to the minute so that
// nobody is refused again at the minute they were told.
func FormatTime(t time.Time) string {
	t = t.UTC()
	if r := t.Truncate(time.Minute); r.Before(t) {
		t = r.Add(time.Minute)
	}
	return t.Format("2 Jan 2006, 15:04 UTC")
}

// What puts money in, for the rules to weigh and the refusals to name.
const (
	WhatDeposit  = "deposit"
	WhatStake    = "stake"
	WhatEntry    = "tournament entry"
	WhatBet      = "bet"
	WhatBuy      = "market buy"
	WhatDonation = "donation"
	WhatTip      = "tip"
)

// moneyIn is one request that puts money in.
type moneyIn struct {
	what    string
	deposit int64   // a deposit's or bet's amount, weighed against the deposit limits
	intent  *string // its intent, once it exists: not counted twice
	stake   int64   // a stake's or entry fee's amount, weighed against stakeMaxMinor
	losses  bool    // play: weighed against the loss limits
	atRisk  int64   // what play may lose: refused when it could take a loss past a limit
}

// closedWhile is what an exclusion or a restriction closes, and what stays
// open: the words of every such refusal and banner.
const (
	closedWhile = "deposits, stakes, tournament entries, bets, market buys, donations and tips"
	openWhile   = "withdrawals, selling shares, cancelling orders, redeeming, chat and free games"
)

// CheckRegion refuses (REGION_RESTRICTED) a request from a country where
// no money goes in: the country a trusted proxy named (see CountryOf).
// A request whose country is unknown is not refused.
func (g *Rules) CheckRegion(ctx context.Context) error {
	if e := regionRule(CountryOf(ctx), g.cfg.Restricted); e != nil {
		return e
	}
	return nil
}

func regionRule(country string, restricted []string) *domain.Error {
	if country == "" || !slices.Contains(restricted, country) {
		return nil
	}
	return domain.Errorf(domain.CodeRegionRestricted,
		"play for money is not offered where you are (%s): %s are closed here; %s stay open", country, closedWhile, openWhile).
		With("country", country)
}

// underageRule refuses for good an account whose birth date was below the
// minimum age.
func underageRule(s *state, minAge int) *domain.Error {
	if !s.Underage {
		return nil
	}
	return domain.Errorf(domain.CodeUnderage,
		"this account is for players aged %d or older, and the birth date given for it is younger: it cannot put money in; %s stay open",
		minAge, openWhile)
}

// ageRule refuses money in before the player confirmed their age, where
// the operator requires it.
func ageRule(s *state, required bool) *domain.Error {
	if !required || s.ConfirmedAt != nil {
		return nil
	}
	return domain.Errorf(domain.CodeAgeUnconfirmed,
		"confirm your age before you put money in: give your birth date on the Responsible play page (Settings), or to POST /users/me/age-confirmation")
}

// exclusionRule refuses money in during a time-out or self-exclusion.
func exclusionRule(s *state) *domain.Error {
	x := s.exclusion
	if x == nil {
		return nil
	}
	var e *domain.Error
	switch {
	case x.Until == nil:
		e = domain.Errorf(domain.CodeSelfExcluded, "you excluded yourself for good: %s are closed to this account; %s stay open",
			closedWhile, openWhile)
	case x.Kind == "timeout":
		e = domain.Errorf(domain.CodeSelfExcluded, "you are taking a time-out until %s: %s are closed until then; %s stay open",
			FormatTime(*x.Until), closedWhile, openWhile)
	default:
		e = domain.Errorf(domain.CodeSelfExcluded, "you excluded yourself until %s: %s are closed until then; %s stay open",
			FormatTime(*x.Until), closedWhile, openWhile)
	}
	var until any
	if x.Until != nil {
		until = x.Until.UTC()
	}
	return e.With("until", until).With("kind", x.Kind)
}

// stakeMaxRule refuses a stake or entry fee above the player's maximum.
func stakeMaxRule(limits map[string]*int64, in moneyIn) *domain.Error {
	max := limits[StakeMax]
	if in.stake <= 0 || max == nil || in.stake <= *max {
		return nil
	}
	return limitError(StakeMax, *max, in.stake, nil, fmt.Sprintf("your maximum stake is %s USDC, and this %s is %s USDC",
		money.FormatUSDC(*max), in.what, money.FormatUSDC(in.stake)))
}

// lossRule refuses play whose whole amount at risk could take the net
// loss of a window past its limit (or any play once it is reached): the
// window with the latest reset, when several would.
func lossRule(s *state, limits map[string]*int64, now time.Time, in moneyIn) *domain.Error {
	if !in.losses {
		return nil
	}
	var worst *domain.Error
	var worstAt *time.Time
	for _, name := range []string{LossDay, LossWeek, LossMonth} {
		limit := limits[name]
		if limit == nil {
			continue
		}
		fits := func(lost int64) bool { return lost < *limit && lost+in.atRisk <= *limit }
		w := WindowOf(name)
		lost := windowSum(s.losses, now, w)
		if fits(lost) {
			continue
		}
		var at *time.Time
		if in.atRisk <= *limit {
			at = freesAt(s.losses, now, w, fits)
		}
		if worst != nil && !later(at, worstAt) {
			continue
		}
		worst, worstAt = limitError(name, *limit, lost, at, lossWords(w, *limit, lost, in, at)), at
	}
	return worst
}

// lossWords says, in plain sentences, what a loss limit is, what is left
// of it, and when this play is allowed.
func lossWords(w time.Duration, limit, lost int64, in moneyIn, at *time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Your %s loss limit is %s USDC", adjective(w), money.FormatUSDC(limit))
	switch {
	case lost >= limit:
		fmt.Fprintf(&b, ", and you have lost %s USDC %s: the limit is reached, so stakes, tournament entries, bets and market buys are closed.",
			money.FormatUSDC(lost), span(w))
		if at != nil {
			fmt.Fprintf(&b, " This %s of %s USDC is allowed again from %s.", in.what, money.FormatUSDC(in.atRisk), FormatTime(*at))
		} else {
			b.WriteString(" They open again when you raise the limit.")
		}
		return b.String()
	case lost > 0:
		fmt.Fprintf(&b, ", and you have lost %s USDC %s, so %s USDC is left.", money.FormatUSDC(lost), span(w), money.FormatUSDC(limit-lost))
	case lost < 0:
		fmt.Fprintf(&b, ", and you are %s USDC up %s, so %s USDC is left.", money.FormatUSDC(-lost), span(w), money.FormatUSDC(limit-lost))
	default:
		fmt.Fprintf(&b, ", and you have lost nothing %s.", span(w))
	}
	fmt.Fprintf(&b, " This %s could lose %s USDC, which would take you past the limit.", in.what, money.FormatUSDC(in.atRisk))
	switch {
	case at != nil:
		fmt.Fprintf(&b, " You can put up to %s USDC at risk now, or this amount from %s.", money.FormatUSDC(limit-lost), FormatTime(*at))
	case in.atRisk > limit:
		fmt.Fprintf(&b, " It is more than the limit itself: you can put up to %s USDC at risk now.", money.FormatUSDC(limit-lost))
	default:
		fmt.Fprintf(&b, " You can put up to %s USDC at risk now.", money.FormatUSDC(limit-lost))
	}
	return b.String()
}

// depositRule refuses a deposit that would take a window's deposits past
// its limit: the window with the latest reset, when several would.
func depositRule(s *state, limits map[string]*int64, now time.Time, in moneyIn) *domain.Error {
	if in.deposit <= 0 {
		return nil
	}
	var worst *domain.Error
	var worstAt *time.Time
	for _, name := range []string{DepositDay, DepositWeek, DepositMonth} {
		limit := limits[name]
		if limit == nil {
			continue
		}
		w := WindowOf(name)
		deposited := windowSum(s.deposits, now, w)
		if deposited+in.deposit <= *limit {
			continue
		}
		var at *time.Time
		if in.deposit <= *limit {
			at = freesAt(s.deposits, now, w, func(sum int64) bool { return sum+in.deposit <= *limit })
		}
		if worst != nil && !later(at, worstAt) {
			continue
		}
		worst, worstAt = limitError(name, *limit, deposited, at, depositWords(w, *limit, deposited, in, at)), at
	}
	return worst
}

// depositWords says, in plain sentences, what a deposit limit is, what is
// left of it, and when this deposit (or bet) is allowed.
func depositWords(w time.Duration, limit, deposited int64, in moneyIn, at *time.Time) string {
	var b strings.Builder
	left, amount, verb := max(limit-deposited, 0), in.deposit, "deposit"
	fmt.Fprintf(&b, "Your %s deposit limit is %s USDC, and you have deposited %s USDC %s, so ",
		adjective(w), money.FormatUSDC(limit), money.FormatUSDC(deposited), span(w))
	if left > 0 {
		fmt.Fprintf(&b, "%s USDC is left.", money.FormatUSDC(left))
	} else {
		b.WriteString("nothing is left.")
	}
	if in.what == WhatBet {
		verb = "bet"
		b.WriteString(" Bets from your wallet count as deposits: what they win or get back is paid to your platform balance.")
	}
	fmt.Fprintf(&b, " This %s of %s USDC would go past the limit.", in.what, money.FormatUSDC(amount))
	switch {
	case amount > limit:
		b.WriteString(" It is more than the limit itself")
		if left > 0 {
			fmt.Fprintf(&b, ": you can %s up to %s USDC now.", verb, money.FormatUSDC(left))
		} else {
			b.WriteString(".")
		}
	case left > 0 && at != nil:
		fmt.Fprintf(&b, " You can %s up to %s USDC now, or this amount from %s.", verb, money.FormatUSDC(left), FormatTime(*at))
	case at != nil:
		fmt.Fprintf(&b, " You can %s this amount from %s.", verb, FormatTime(*at))
	}
	return b.String()
}

// later reports whether a is later than b, where nil is never (later than
// any time).
func later(a, b *time.Time) bool {
	switch {
	case b == nil:
		return false
	case a == nil:
		return true
	}
	return a.After(*b)
}

// limitError is the LIMIT_EXCEEDED refusal of a limit: its name, its value
// and what is used of it, and when it frees enough (null: not by waiting).
func limitError(name string, limit, used int64, resetsAt *time.Time, message string) *domain.Error {
	var at any
	if resetsAt != nil {
		at = resetsAt.UTC()
	}
	return domain.Errorf(domain.CodeLimitExceeded, "%s", message).With("limit", name).With("resetsAt", at).
		With("limitMinor", limit).With("usedMinor", used)
}

func adjective(w time.Duration) string {
	switch w {
	case Day:
		return "daily"
	case Week:
		return "weekly"
	}
	return "monthly"
}

func span(w time.Duration) string {
	switch w {
	case Day:
		return "in the last 24 hours"
	case Week:
		return "in the last 7 days"
	}
	return "in the last 30 days"
}

// windowSum is the sum of the flows in the window of length w ending at
// now (after now-w).
func windowSum(flows []flow, now time.Time, w time.Duration) int64 {
	var sum int64
	from := now.Add(-w)
	for _, f := range flows {
		if f.At.After(from) {
			sum += f.Minor
		}
	}
	return sum
}

// freesAt returns the earliest time from now on at which the flows left
// in the window, with nothing new, make ok true, or nil when that never
// happens. A flow leaves the window w after it happened; flows of the
// same moment leave together.
func freesAt(flows []flow, now time.Time, w time.Duration, ok func(sum int64) bool) *time.Time {
	from := now.Add(-w)
	var in []flow
	for _, f := range flows {
		if f.At.After(from) {
			in = append(in, f)
		}
	}
	slices.SortStableFunc(in, func(a, b flow) int { return a.At.Compare(b.At) })
	sum := windowSum(in, now, w)
	for i := 0; i < len(in); {
		at := in[i].At
		for ; i < len(in) && in[i].At.Equal(at); i++ {
			sum -= in[i].Minor
		}
		if ok(sum) {
			t := at.Add(w).UTC()
			return &t
		}
	}
	return nil
}

// refusal applies the rules of one player's state to what in puts in, in
// order: an underage account, a running exclusion, an age not confirmed,
// then the limits. It returns nil when none refuses.
func (g *Rules) refusal(s *state, now time.Time, in moneyIn) *domain.Error {
	if e := underageRule(s, g.cfg.MinAge); e != nil {
		return e
	}
	if e := exclusionRule(s); e != nil {
		return e
	}
	if e := ageRule(s, g.cfg.RequireAge); e != nil {
		return e
	}
	limits := s.limits(now)
	if e := stakeMaxRule(limits, in); e != nil {
		return e
	}
	if e := lossRule(s, limits, now, in); e != nil {
		return e
	}
	return depositRule(s, limits, now, in)
}

// Refusal is the refusal (nil: none) of play by userID that puts atRisk
// at risk, once lost more of their play money left their balance earlier
// in the same transaction (negative: came in).
type Refusal = func(userID string, lost, atRisk int64) *domain.Error

// rules reads what the rules of what in puts in need to know of users,
// in idb (a transaction of the caller's, or the database) in one
// statement. In a transaction it first takes the users' protection locks
// (lockPlayers) and only then reads the clock: what the transaction puts
// in is weighed after every exclusion, limit and money in of theirs that
// committed before, however long it waited for them.
func (g *Rules) rules(ctx context.Context, idb bun.IDB, users []string, in moneyIn) (Refusal, error) {
	if tx, ok := idb.(db.Tx); ok {
		if err := lockPlayers(ctx, tx, users); err != nil {
			return nil, err
		}
	}
	now := g.now()
	states, err := g.states(ctx, idb, users, now, needs{losses: in.losses, deposits: in.deposit > 0, except: in.intent})
	if err != nil {
		return nil, err
	}
	return func(userID string, lost, atRisk int64) *domain.Error {
		s := states[userID]
		if s == nil {
			return nil
		}
		if lost != 0 {
			moved := *s
			moved.losses = append(slices.Clip(s.losses), flow{At: now, Minor: lost})
			s = &moved
		}
		play := in
		play.atRisk = atRisk
		return g.refusal(s, now, play)
	}, nil
}

// refusals returns the refusal of each of users that the rules refuse
// what in puts in (nobody else is in the map), read in one statement.
func (g *Rules) refusals(ctx context.Context, idb bun.IDB, users []string, in moneyIn) (map[string]*domain.Error, error) {
	out := map[string]*domain.Error{}
	if len(users) == 0 {
		return out, nil
	}
	refusal, err := g.rules(ctx, idb, users, in)
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if e := refusal(u, 0, in.atRisk); e != nil {
			out[u] = e
		}
	}
	return out, nil
}

// check is refusals of one user who asks in this request: the request's
// region first.
func (g *Rules) check(ctx context.Context, idb bun.IDB, userID string, in moneyIn) error {
	if err := g.CheckRegion(ctx); err != nil {
		return err
	}
	refused, err := g.refusals(ctx, idb, []string{userID}, in)
	if err != nil {
		return err
	}
	if e := refused[userID]; e != nil {
		return e
	}
	return nil
}

// CheckDeposit refuses a deposit of amount: REGION_RESTRICTED, UNDERAGE,
// SELF_EXCLUDED, AGE_UNCONFIRMED, or LIMIT_EXCEEDED when it would take a
// window's deposits (prepared ones included) past its limit.
func (g *Rules) CheckDeposit(ctx context.Context, idb bun.IDB, userID string, amount int64) error {
	return g.check(ctx, idb, userID, moneyIn{what: WhatDeposit, deposit: amount})
}

// CheckSent refuses, as it is first sent, money a user prepared to put in
// with an intent of kind ("deposit", "donation", "tip" or "bet") for what
// closed since its prepare: REGION_RESTRICTED (this request's), UNDERAGE,
// SELF_EXCLUDED, AGE_UNCONFIRMED, or, for a deposit, LIMIT_EXCEEDED when
// it would now pass a deposit limit (one made tighter since). Run in the
// transaction that marks the intent sent, it is ordered against an
// exclusion by the player's lock. Any other kind passes: money going out
// is never refused.
func (g *Rules) CheckSent(ctx context.Context, idb bun.IDB, userID, kind, intentID string, amount int64) error {
	switch kind {
	case WhatDeposit, WhatBet:
		return g.check(ctx, idb, userID, moneyIn{what: kind, deposit: amount, intent: &intentID})
	case WhatDonation, WhatTip:
		return g.check(ctx, idb, userID, moneyIn{what: kind})
	}
	return nil
}

// CheckStake refuses a stake of the requesting player: REGION_RESTRICTED,
// UNDERAGE, SELF_EXCLUDED, AGE_UNCONFIRMED, or LIMIT_EXCEEDED when it is
// above the maximum stake or losing it could pass a loss limit. A free game (stake
// 0) puts no money in and is never refused.
func (g *Rules) CheckStake(ctx context.Context, idb bun.IDB, userID string, stake int64) error {
	if stake <= 0 {
		return nil
	}
	return g.check(ctx, idb, userID, moneyIn{what: WhatStake, stake: stake, losses: true, atRisk: stake})
}

// StakeRefusals returns the refusals of a stake for players who are not
// the one asking (an opponent waiting in a queue, a challenger, the other
// player of a rematch): CheckStake's rules without the request's region,
// which is not theirs.
func (g *Rules) StakeRefusals(ctx context.Context, idb bun.IDB, users []string, stake int64) (map[string]*domain.Error, error) {
	if stake <= 0 {
		return map[string]*domain.Error{}, nil
	}
	return g.refusals(ctx, idb, users, moneyIn{what: WhatStake, stake: stake, losses: true, atRisk: stake})
}

// CheckEntry refuses a tournament entry fee as CheckStake refuses a stake
// (the entry is refused above stakeMaxMinor and when losing it could pass
// a loss limit). A free entry is never refused.
func (g *Rules) CheckEntry(ctx context.Context, idb bun.IDB, userID string, fee int64) error {
	if fee <= 0 {
		return nil
	}
	return g.check(ctx, idb, userID, moneyIn{what: WhatEntry, stake: fee, losses: true, atRisk: fee})
}

// CheckBet refuses a bet of amount (its intent's id once it has one, ""
// at its prepare): REGION_RESTRICTED, UNDERAGE, SELF_EXCLUDED,
// AGE_UNCONFIRMED, or LIMIT_EXCEEDED when losing it could take a window's
// net loss past its limit, or when it would take a window's deposits past
// their limit: a bet comes from the wallet and what it wins or gets back
// is paid to the platform balance, so it counts as a deposit.
func (g *Rules) CheckBet(ctx context.Context, idb bun.IDB, userID string, amount int64, intentID string) error {
	in := moneyIn{what: WhatBet, deposit: amount, losses: true, atRisk: amount}
	if intentID != "" {
		in.intent = &intentID
	}
	return g.check(ctx, idb, userID, in)
}

// BuyRefusals reads what the rules of market buys (CheckBet's but the
// region, which the market checks when an order arrives: CheckRegion)
// need to know of users, for the orders of a batch in one statement, and
// returns the refusal of a buy by one of them putting atRisk at risk
// (nil: none) after the batch's orders before it moved lost of their
// play money out of their balance (negative: in): the buys of one batch
// are weighed one after another, not each against the losses before it.
func (g *Rules) BuyRefusals(ctx context.Context, idb bun.IDB, users []string) (Refusal, error) {
	return g.rules(ctx, idb, users, moneyIn{what: WhatBuy, losses: true})
}

// CheckDonation refuses a donation: REGION_RESTRICTED, UNDERAGE,
// SELF_EXCLUDED or AGE_UNCONFIRMED (donations are not play: no loss limit
// counts them).
func (g *Rules) CheckDonation(ctx context.Context, idb bun.IDB, userID string) error {
	return g.check(ctx, idb, userID, moneyIn{what: WhatDonation})
}

// CheckTip refuses a tip sent, as CheckDonation refuses a donation.
func (g *Rules) CheckTip(ctx context.Context, idb bun.IDB, userID string) error {
	return g.check(ctx, idb, userID, moneyIn{what: WhatTip})
}
