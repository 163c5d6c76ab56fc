package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"wager/domain/money"
	"wager/domain/referrals"
)

// referralSummary is GET /referrals/me.
type referralSummary struct {
	Code       string `json:"code"`
	Link       string `json:"link"`
	ReferredBy *struct {
		UserID   string `json:"userId"`
		Username string `json:"username"`
	} `json:"referredBy"`
	Levels []struct {
		Level int `json:"level"`
		Users int `json:"users"`
	} `json:"levels"`
	PendingMinor int64 `json:"pendingMinor"`
	ClaimedMinor int64 `json:"claimedMinor"`
}

type referralReward struct {
	ID          string `json:"id"`
	FromUserID  string `json:"fromUserId"`
	Level       int    `json:"level"`
	GameID      string `json:"gameId"`
	AmountMinor int64  `json:"amountMinor"`
	Status      string `json:"status"`
	CreatedAt   string `json:"createdAt"`
}

func (a *testApp) referrals(t testing.TB, p player) referralSummary {
	t.Helper()
	var out referralSummary
	a.getJSON(t, p, "/referrals/me", &out)
	return out
}

func (a *testApp) getJSON(t testing.TB, p player, path string, v any) {
	t.Helper()
	r := a.do(t, request{path: path, header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
	}
	if err := json.Unmarshal(r.Body.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, r.Body)
	}
}

// loginReferred signs w in with a referral code and returns the answer.
func (a *testApp) loginReferred(t testing.TB, w wallet, code string) response {
	t.Helper()
	msg := a.requestChallenge(t, w, "agent-1")
	return a.do(t, request{method: http.MethodPost, path: "/auth/login-wallet", header: appHeaders("agent-1"),
		body: jsonBody(map[string]string{"address": w.address(), "signedMessage": w.sign(msg), "referralCode": code})})
}

// referredPlayer signs a new wallet in with code.
func (a *testApp) referredPlayer(t testing.TB, code string) player {
	t.Helper()
	w := newWallet(t)
	r := a.loginReferred(t, w, code)
	if r.Code != http.StatusOK {
		t.Fatalf("login with referral code %q: %d %s", code, r.Code, r.Body)
	}
	m := r.json(t)
	return player{wallet: w, id: m["user"].(map[string]any)["id"].(string), auth: bearer(m["access_token"].(string), "agent-1")}
}

// referredDepositor is referredPlayer with usdc deposited.
func (a *testApp) referredDepositor(t testing.TB, code string, usdc int64) player {
	t.Helper()
	p := a.referredPlayer(t, code)
	if r := a.do(t, request{method: http.MethodPost, path: "/dev/faucet",
		body: jsonBody(map[string]any{"address": p.address(), "amountMinor": usdc})}); r.Code != 200 {
		t.Fatalf("faucet: %d %s", r.Code, r.Body)
	}
	prep := a.prepare(t, p.auth, a.depositAddress(t, p.auth), usdc)
	if r := a.submit(t, p.auth, prep["intentId"].(string), signPrepared(t, p.wallet, prep["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}
	return p
}

// playStaked plays a 1-round rps game for stake that first (seat 0) wins
// against second, and returns its id.
func (a *testApp) playStaked(t *testing.T, first, second player, stake int64) string {
	t.Helper()
	lobby := a.lobby(t, first, fmt.Sprintf(`{"gameType": "rps", "stakeMinor": %d, "settings": {"rounds": 1}}`, stake))
	a.join(t, first, lobby)
	game := a.join(t, second, lobby)["gameId"].(string)
	a.playTo(t, first, second, game, 1)
	return game
}

func TestReferralCodeIsReadAtTheFirstLoginOnly(t *testing.T) {
	a := newTestApp(t, noWorkers)
	ref, other := a.newPlayer(t), a.newPlayer(t)
	code := a.referrals(t, ref).Code
	if len(code) < 6 || a.referrals(t, other).Code == code {
		t.Fatalf("codes: %q and %q", code, a.referrals(t, other).Code)
	}

	t.Run("a new user's code names their referrer, in any case", func(t *testing.T) {
		u := a.referredPlayer(t, " "+strings.ToUpper(code)+" ")
		got := a.referrals(t, u)
		if got.ReferredBy == nil || got.ReferredBy.UserID != ref.id || got.ReferredBy.Username == "" {
			t.Fatalf("referredBy: %+v, want %s", got.ReferredBy, ref.id)
		}
		if got.Link != a.Config.PublicURL+"/?ref="+got.Code {
			t.Errorf("link %q", got.Link)
		}
		// A later login with another code changes nothing.
		if r := a.loginReferred(t, u.wallet, a.referrals(t, other).Code); r.Code != 200 {
			t.Fatalf("second login: %d %s", r.Code, r.Body)
		}
		if got := a.referrals(t, u); got.ReferredBy == nil || got.ReferredBy.UserID != ref.id {
			t.Errorf("after a second login with another code: referredBy %+v, want %s", got.ReferredBy, ref.id)
		}
		var tree []struct {
			UserID      string `json:"userId"`
			Username    string `json:"username"`
			JoinedAt    string `json:"joinedAt"`
			GamesPlayed int    `json:"gamesPlayed"`
			EarnedMinor int64  `json:"earnedMinor"`
		}
		a.getJSON(t, ref, "/referrals/me/tree", &tree)
		if len(tree) != 1 || tree[0].UserID != u.id || tree[0].JoinedAt == "" || tree[0].GamesPlayed != 0 || tree[0].EarnedMinor != 0 {
			t.Errorf("the referrer's tree: %+v, want only %s", tree, u.id)
		}
		if s := a.referrals(t, ref); s.Levels[0].Users != 1 || s.Levels[1].Users != 0 {
			t.Errorf("levels: %+v", s.Levels)
		}
	})
	t.Run("an existing user's code at a later login is ignored", func(t *testing.T) {
		if r := a.loginReferred(t, other.wallet, code); r.Code != 200 {
			t.Fatalf("login: %d %s", r.Code, r.Body)
		}
		if got := a.referrals(t, other); got.ReferredBy != nil {
			t.Errorf("referredBy after a later login: %+v, want null", got.ReferredBy)
		}
	})
	t.Run("an unknown code is ignored and the login succeeds", func(t *testing.T) {
		u := a.referredPlayer(t, "no-such-code")
		r := a.do(t, request{path: "/referrals/me", header: u.auth})
		if r.Code != 200 || r.json(t)["referredBy"] != nil {
			t.Errorf("referrals of a user with an unknown code: %d %s", r.Code, r.Body)
		}
	})
	t.Run("a user's own code cannot name themselves", func(t *testing.T) {
		// The database refuses it whatever the code path.
		_, err := a.DB.ExecContext(t.Context(), "UPDATE referrals SET referred_by = user_id WHERE user_id = ?", other.id)
		if err == nil {
			t.Error("a user became their own referrer")
		}
	})
	t.Run("the tree's level is 1 to 3", func(t *testing.T) {
		for _, q := range []string{"?level=0", "?level=4", "?level=x", "?level=-1", "?limit=0"} {
			a.do(t, request{path: "/referrals/me/tree" + q, header: ref.auth}).wantError(t, 400, "VALIDATION_ERROR")
		}
		for _, q := range []string{"?level=1", "?level=2", "?level=3"} {
			r := a.do(t, request{path: "/referrals/me/tree" + q, header: ref.auth})
			if r.Code != 200 {
				t.Errorf("tree%s: %d %s", q, r.Code, r.Body)
			}
		}
		if r := a.do(t, request{path: "/referrals/me/tree?level=2", header: ref.auth}); r.Body.String() != "[]\n" {
			t.Errorf("an empty level: %q, want []", r.Body)
		}
		if r := a.do(t, request{path: "/referrals/me/rewards", header: ref.auth}); r.Body.String() != "[]\n" {
			t.Errorf("no rewards: %q, want []", r.Body)
		}
		a.do(t, request{path: "/referrals/me/rewards?before=nope", header: ref.auth}).wantError(t, 400, "VALIDATION_ERROR")
		a.do(t, request{path: "/referrals/me"}).wantError(t, 401, "UNAUTHORIZED")
	})
}

// A chain g <- a <- b <- c <- d (d was referred by c, ...) and e <- f.
// d (seat 0) beats f (seat 1) for 999950 each: total 1999900, fee 19999;
// d's share is 10000 (with the odd unit), f's 9999. From d's share c earns
// 20% = 2000, b 5% = 500, a 2% = 200, g (level 4) nothing; from f's share
// e earns floor(1999.8) = 1999.
func TestReferralRewardsOfAThreeLevelChain(t *testing.T) {
	a := newTestApp(t, noWorkers)
	g := a.newPlayer(t)
	pa := a.referredPlayer(t, a.referrals(t, g).Code)
	pb := a.referredPlayer(t, a.referrals(t, pa).Code)
	pc := a.referredPlayer(t, a.referrals(t, pb).Code)
	const stake = 999_950
	d := a.referredDepositor(t, a.referrals(t, pc).Code, stake)
	e := a.newPlayer(t)
	f := a.referredDepositor(t, a.referrals(t, e).Code, stake)
	treasury, pending := a.ledger(t, money.Treasury), a.ledger(t, referrals.Pending)

	game := a.playStaked(t, d, f, stake)

	want := map[string][]referralReward{
		pc.id: {{FromUserID: d.id, Level: 1, AmountMinor: 2000}},
		pb.id: {{FromUserID: d.id, Level: 2, AmountMinor: 500}},
		pa.id: {{FromUserID: d.id, Level: 3, AmountMinor: 200}},
		e.id:  {{FromUserID: f.id, Level: 1, AmountMinor: 1999}},
		g.id:  {},
		d.id:  {},
		f.id:  {},
	}
	everyone := map[string]player{pa.id: pa, pb.id: pb, pc.id: pc, d.id: d, e.id: e, f.id: f, g.id: g}
	var total int64
	for id, w := range want {
		var got []referralReward
		a.getJSON(t, everyone[id], "/referrals/me/rewards", &got)
		if len(got) != len(w) {
			t.Errorf("rewards of %s: %+v, want %+v", id, got, w)
			continue
		}
		for i := range w {
			if got[i].FromUserID != w[i].FromUserID || got[i].Level != w[i].Level || got[i].AmountMinor != w[i].AmountMinor ||
				got[i].GameID != game || got[i].Status != "pending" || got[i].ID == "" || got[i].CreatedAt == "" {
				t.Errorf("reward of %s: %+v, want %+v from game %s, pending", id, got[i], w[i], game)
			}
			total += w[i].AmountMinor
		}
		if s := a.referrals(t, everyone[id]); len(w) == 1 && s.PendingMinor != w[0].AmountMinor {
			t.Errorf("pendingMinor of %s: %d, want %d", id, s.PendingMinor, w[0].AmountMinor)
		}
		// A reward comes with a referral_reward notification.
		notes, _ := a.notifications(t, everyone[id], "")
		n := 0
		for _, note := range notes {
			if note.Type == "referral_reward" {
				n++
			}
		}
		if n != len(w) {
			t.Errorf("%s has %d referral_reward notifications, want %d", id, n, len(w))
		}
	}
	if total != 4699 {
		t.Fatalf("rewards total %d, want 4699", total)
	}
	if got := a.ledger(t, money.Treasury) - treasury; got != 19_999-total {
		t.Errorf("treasury: +%d, want the fee less the rewards, %d", got, 19_999-total)
	}
	if got := a.ledger(t, referrals.Pending) - pending; got != total {
		t.Errorf("pending rewards account: +%d, want %d", got, total)
	}
	// The tree shows what each user below earned you.
	var tree []struct {
		UserID      string `json:"userId"`
		GamesPlayed int    `json:"gamesPlayed"`
		EarnedMinor int64  `json:"earnedMinor"`
	}
	a.getJSON(t, pa, "/referrals/me/tree?level=3", &tree)
	if len(tree) != 1 || tree[0].UserID != d.id || tree[0].GamesPlayed != 1 || tree[0].EarnedMinor != 200 {
		t.Errorf("a's level 3: %+v, want d with 1 game and 200 earned", tree)
	}
	if s := a.referrals(t, g); s.Levels[0].Users != 1 || s.Levels[1].Users != 1 || s.Levels[2].Users != 1 || len(s.Levels) != 3 {
		t.Errorf("g's levels: %+v, want one user at each of 1-3 (d, at level 4, is not counted)", s.Levels)
	}
	// Recruiter: for the level-1 referrers of the players only.
	for _, p := range []player{pc, e} {
		if !slices.Contains(a.achievementIDs(t, p.id), "recruiter") {
			t.Errorf("%s lacks recruiter: %v", p.id, a.achievementIDs(t, p.id))
		}
	}
	for _, p := range []player{pa, pb, g} {
		if slices.Contains(a.achievementIDs(t, p.id), "recruiter") {
			t.Errorf("%s, not a level-1 referrer of a player, has recruiter", p.id)
		}
	}

	// Claiming moves the pending rewards to the available balance.
	before := a.balances(t, pc.auth).available
	r := a.do(t, request{method: http.MethodPost, path: "/referrals/me/claim", header: pc.auth})
	if r.Code != 200 || r.json(t)["claimedMinor"] != float64(2000) {
		t.Fatalf("claim: %d %s", r.Code, r.Body)
	}
	if got := a.balances(t, pc.auth).available - before; got != 2000 {
		t.Errorf("available after the claim: +%d, want +2000", got)
	}
	if s := a.referrals(t, pc); s.PendingMinor != 0 || s.ClaimedMinor != 2000 {
		t.Errorf("after the claim: pending %d claimed %d", s.PendingMinor, s.ClaimedMinor)
	}
	r = a.do(t, request{method: http.MethodPost, path: "/referrals/me/claim", header: pc.auth})
	if r.Code != 200 || r.Body.String() != "{\"claimedMinor\":0}\n" {
		t.Errorf("a claim with nothing pending: %d %q", r.Code, r.Body)
	}
	if got := a.ledger(t, referrals.Pending) - pending; got != total-2000 {
		t.Errorf("pending rewards account after the claim: +%d, want %d", got, total-2000)
	}
}

// A free game and a draw pay no rewards; a staked draw still makes a
// recruiter (the referred user finished a staked game).
func TestOnlyAWonStakedGamePaysRewards(t *testing.T) {
	a := newTestApp(t, noWorkers)
	ref := a.newPlayer(t)
	code := a.referrals(t, ref).Code
	p1, p2 := a.referredPlayer(t, code), a.newPlayer(t)
	a.playStaked(t, p1, p2, 0)
	var got []referralReward
	a.getJSON(t, ref, "/referrals/me/rewards", &got)
	if len(got) != 0 {
		t.Errorf("a free game paid rewards: %+v", got)
	}
	if slices.Contains(a.achievementIDs(t, ref.id), "recruiter") {
		t.Error("a free game made a recruiter")
	}
}

func TestConcurrentClaimsPayOnce(t *testing.T) {
	a := newTestApp(t, noWorkers)
	ref := a.newPlayer(t)
	code := a.referrals(t, ref).Code
	const stake = 5_000_000
	p1, p2 := a.referredDepositor(t, code, stake), a.referredDepositor(t, code, stake)
	a.playStaked(t, p1, p2, stake)
	// Fee 100000: shares 50000 each, 20% of each to ref.
	const want = 20_000
	if s := a.referrals(t, ref); s.PendingMinor != want {
		t.Fatalf("pending before the claims: %d, want %d", s.PendingMinor, want)
	}
	before := a.balances(t, ref.auth).available
	var wg sync.WaitGroup
	claimed := make([]float64, 10)
	for i := range claimed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := a.do(t, request{method: http.MethodPost, path: "/referrals/me/claim", header: ref.auth})
			if r.Code != 200 {
				t.Errorf("claim %d: %d %s", i, r.Code, r.Body)
				return
			}
			var m map[string]float64
			if err := json.Unmarshal(r.Body.Bytes(), &m); err != nil {
				t.Error(err)
			}
			claimed[i] = m["claimedMinor"]
		}()
	}
	wg.Wait()
	var sum float64
	paid := 0
	for _, c := range claimed {
		sum += c
		if c > 0 {
			paid++
		}
	}
	if sum != want || paid != 1 {
		t.Errorf("ten concurrent claims answered %v, want one of %d and nine of 0", claimed, want)
	}
	if got := a.balances(t, ref.auth).available - before; got != want {
		t.Errorf("available: +%d, want +%d", got, want)
	}
	var rewards []referralReward
	a.getJSON(t, ref, "/referrals/me/rewards", &rewards)
	if len(rewards) != 2 || rewards[0].Status != "claimed" || rewards[1].Status != "claimed" {
		t.Errorf("rewards after the claims: %+v", rewards)
	}
	// The rewards page newest first.
	var first, next []referralReward
	a.getJSON(t, ref, "/referrals/me/rewards?limit=1", &first)
	if len(first) != 1 || first[0].ID != rewards[0].ID {
		t.Fatalf("first page: %+v, want %s", first, rewards[0].ID)
	}
	a.getJSON(t, ref, "/referrals/me/rewards?before="+first[0].ID, &next)
	if len(next) != 1 || next[0].ID != rewards[1].ID {
		t.Errorf("the page after %s: %+v, want %s", first[0].ID, next, rewards[1].ID)
	}
}

// The browser sign-in takes the referral code too, and the referrer's
// page shows the link, the team by level, the rewards with their games
// and a claim that moves them to the balance.
func TestReferralsPageInPlainWords(t *testing.T) {
	a := newTestApp(t, noWorkers)
	refWallet := newWallet(t)
	refCookie := a.sessionCookie(t, refWallet)
	get := func(cookie, path string) string {
		r := a.do(t, request{path: path, header: map[string]string{"Cookie": cookie}})
		if r.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
		}
		return visibleText(r.Body.String())
	}
	text := get(refCookie, "/referrals")
	for _, want := range []string{"Your link", "Level 1, brought in by you: 0 people", "Nobody here yet.",
		"No rewards yet.", "0 USDC waiting to be claimed"} {
		if !strings.Contains(text, want) {
			t.Errorf("an empty referrals page lacks %q: %q", want, text)
		}
	}
	var ref player
	ref.auth = map[string]string{"Cookie": refCookie}
	var me referralSummary
	a.getJSON(t, ref, "/referrals/me", &me)

	// A browser sign-in with the code.
	w := newWallet(t)
	msg := a.requestChallenge(t, w, "web")
	r := a.do(t, request{method: http.MethodPost, path: "/session", header: map[string]string{"Origin": "http://example.com"},
		body: jsonBody(map[string]string{"address": w.address(), "signedMessage": w.sign(msg), "referralCode": me.Code})})
	if r.Code != http.StatusOK {
		t.Fatalf("browser sign-in with a code: %d %s", r.Code, r.Body)
	}
	name := r.json(t)["user"].(map[string]any)["username"].(string)
	text = get(refCookie, "/referrals")
	if !strings.Contains(text, "Level 1, brought in by you: 1 person") || !strings.Contains(text, name) {
		t.Errorf("the page does not show %s at level 1: %q", name, text)
	}

	// A staked game of a referred player earns a reward the page names.
	p1, p2 := a.referredDepositor(t, me.Code, 1_000_000), a.newPlayer(t)
	a.do(t, request{method: http.MethodPost, path: "/dev/faucet", body: jsonBody(map[string]any{"address": p2.address(), "amountMinor": 1_000_000})})
	prep := a.prepare(t, p2.auth, a.depositAddress(t, p2.auth), 1_000_000)
	a.submit(t, p2.auth, prep["intentId"].(string), signPrepared(t, p2.wallet, prep["transaction"].(string), nil))
	a.playStaked(t, p1, p2, 1_000_000)
	// Fee 20000, p1's share 10000, 20% of it: 0.002 USDC.
	text = get(refCookie, "/referrals")
	for _, want := range []string{"0.002 USDC waiting to be claimed", "0.002 USDC from " + a.usernameOf(t, p1) + "'s rock, paper, scissors game (level 1), waiting to be claimed"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q: %q", want, text)
		}
	}
	form := "_csrf=" + a.csrfOf(t, refCookie)
	r = a.do(t, request{method: http.MethodPost, path: "/referrals/page/claim", body: form,
		header: map[string]string{"Cookie": refCookie, "Content-Type": "application/x-www-form-urlencoded"}})
	if r.Code != http.StatusSeeOther {
		t.Fatalf("claim from the page: %d %s", r.Code, r.Body)
	}
	text = get(refCookie, r.Header().Get("Location"))
	if !strings.Contains(text, "0.002 USDC moved to your balance.") || !strings.Contains(text, "0.002 USDC claimed so far") {
		t.Errorf("after the claim: %q", text)
	}
	if body := a.do(t, request{path: "/", header: map[string]string{"Cookie": refCookie}}).Body.String(); !strings.Contains(body, `href="/referrals"`) {
		t.Error("the header has no link to the referrals page")
	}
}

func (a *testApp) usernameOf(t *testing.T, p player) string {
	t.Helper()
	return a.do(t, request{path: "/users/me", header: p.auth}).json(t)["username"].(string)
}

// REFERRAL_BPS sets the parts: 10% at level 1 and nothing at level 2.
func TestReferralPartsFollowTheConfiguration(t *testing.T) {
	env := map[string]string{"REFERRAL_BPS": "1000,0,0"}
	for k, v := range noWorkers {
		env[k] = v
	}
	a := newTestApp(t, env)
	top := a.newPlayer(t)
	mid := a.referredPlayer(t, a.referrals(t, top).Code)
	const stake = 5_000_000
	p1, p2 := a.referredDepositor(t, a.referrals(t, mid).Code, stake), a.referredDepositor(t, "", stake)
	a.playStaked(t, p1, p2, stake)
	// Fee 100000, p1's share 50000: 10% to mid, 0% to top.
	if got := a.referrals(t, mid).PendingMinor; got != 5_000 {
		t.Errorf("level 1 at 1000 bps: %d, want 5000", got)
	}
	var rewards []referralReward
	a.getJSON(t, top, "/referrals/me/rewards", &rewards)
	if len(rewards) != 0 {
		t.Errorf("level 2 at 0 bps earned %+v", rewards)
	}
}
