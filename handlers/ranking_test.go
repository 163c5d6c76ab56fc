package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/uptrace/bun"

	"wager/domain/ranking"
)

// boardRow is one line of a leaderboard.
type boardRow struct {
	Rank             int     `json:"rank"`
	UserID           string  `json:"userId"`
	Username         string  `json:"username"`
	GamesPlayed      int     `json:"gamesPlayed"`
	Wins             int     `json:"wins"`
	Losses           int     `json:"losses"`
	Draws            int     `json:"draws"`
	NetWinningsMinor int64   `json:"netWinningsMinor"`
	Rating           float64 `json:"rating"`
	RatingDeviation  float64 `json:"ratingDeviation"`
	Provisional      bool    `json:"provisional"`
	RatingGameType   *string `json:"ratingGameType"`
}

// board reads one page of a leaderboard.
func (a *testApp) board(t testing.TB, path string, auth map[string]string) []boardRow {
	t.Helper()
	r := a.do(t, request{path: path, header: auth})
	if r.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
	}
	var rows []boardRow
	if err := json.Unmarshal(r.Body.Bytes(), &rows); err != nil || rows == nil {
		t.Fatalf("GET %s: %s is not an array of rows: %v", path, r.Body, err)
	}
	return rows
}

// wholeBoard reads every page of a leaderboard (sep is ? or &, whichever
// follows path) and checks that the ranks count 1, 2, 3... across pages.
func (a *testApp) wholeBoard(t testing.TB, path, sep string, auth map[string]string) []boardRow {
	t.Helper()
	var all []boardRow
	for {
		page := a.board(t, fmt.Sprintf("%s%slimit=200&offset=%d", path, sep, len(all)), auth)
		for i, r := range page {
			if r.Rank != len(all)+i+1 {
				t.Fatalf("%s: row %d has rank %d", path, len(all)+i+1, r.Rank)
			}
		}
		all = append(all, page...)
		if len(page) < 200 {
			return all
		}
	}
}

func rowOf(t testing.TB, rows []boardRow, userID string) boardRow {
	t.Helper()
	for _, r := range rows {
		if r.UserID == userID {
			return r
		}
	}
	t.Fatalf("user %s is not on the board", userID)
	return boardRow{}
}

func onBoard(rows []boardRow, userID string) bool {
	for _, r := range rows {
		if r.UserID == userID {
			return true
		}
	}
	return false
}

// wantNetOrder fails unless rows go by net winnings, then wins.
func wantNetOrder(t testing.TB, rows []boardRow) {
	t.Helper()
	for i := 1; i < len(rows); i++ {
		p, r := rows[i-1], rows[i]
		if p.NetWinningsMinor < r.NetWinningsMinor || (p.NetWinningsMinor == r.NetWinningsMinor && p.Wins < r.Wins) {
			t.Fatalf("rank %d (net %d, %d wins) is above rank %d (net %d, %d wins)",
				p.Rank, p.NetWinningsMinor, p.Wins, r.Rank, r.NetWinningsMinor, r.Wins)
		}
	}
}

// playRPS plays a 1-round game to its end: winner rock, loser scissors.
func (a *testApp) playRPS(t testing.TB, winner, loser player, game string) {
	t.Helper()
	a.act(t, winner, game, `{"type": "move", "move": "rock"}`)
	if r := a.act(t, loser, game, `{"type": "move", "move": "scissors"}`); r.Code != 200 || r.json(t)["status"] != "completed" {
		t.Fatalf("deciding move: %d %s", r.Code, r.Body)
	}
}

// wantNoBots fails when a demo bot is on the board.
func (a *testApp) wantNoBots(t testing.TB, rows []boardRow) {
	t.Helper()
	var bots []string
	if err := a.DB.NewSelect().Table("users").Column("id").Where("bot").Scan(context.Background(), &bots); err != nil {
		t.Fatal(err)
	}
	for _, b := range bots {
		if onBoard(rows, b) {
			t.Fatalf("demo bot %s is on a leaderboard", b)
		}
	}
}

func TestGlobalBoardRanksByNetWinnings(t *testing.T) {
	a := newTestApp(t, nil)
	const stake = 1_000_000
	winner, loser, game := a.stakedGame(t, stake, `{"rounds": 1}`)
	a.playRPS(t, winner, loser, game)
	freeWinner, freeLoser, free := a.match(t, `{"rounds": 1}`)
	a.playRPS(t, freeWinner, freeLoser, free)

	for _, period := range []string{"", "?period=all", "?period=month", "?period=week", "?period=day"} {
		sep := "&"
		if period == "" {
			sep = "?"
		}
		rows := a.wholeBoard(t, "/leaderboards/global"+period, sep, nil)
		wantNetOrder(t, rows)
		a.wantNoBots(t, rows)
		w, l := rowOf(t, rows, winner.id), rowOf(t, rows, loser.id)
		fw, fl := rowOf(t, rows, freeWinner.id), rowOf(t, rows, freeLoser.id)
		// 2 USDC pot, 1% fee: the winner is paid 1.98 USDC for a 1 USDC stake.
		if w.GamesPlayed != 1 || w.Wins != 1 || w.Losses != 0 || w.NetWinningsMinor != 980_000 {
			t.Errorf("%s: winner %+v, want 1 game, 1 win, net 980000", period, w)
		}
		if l.GamesPlayed != 1 || l.Wins != 0 || l.Losses != 1 || l.NetWinningsMinor != -stake {
			t.Errorf("%s: loser %+v, want 1 game, 1 loss, net -1000000", period, l)
		}
		if fw.Wins != 1 || fw.NetWinningsMinor != 0 || fl.Losses != 1 || fl.NetWinningsMinor != 0 {
			t.Errorf("%s: free game's players %+v and %+v, want a win and a loss at net 0", period, fw, fl)
		}
		if !(w.Rank < fw.Rank && fw.Rank < fl.Rank && fl.Rank < l.Rank) {
			t.Errorf("%s: ranks staked winner %d, free winner %d, free loser %d, staked loser %d: want that order",
				period, w.Rank, fw.Rank, fl.Rank, l.Rank)
		}
		if w.RatingGameType == nil || *w.RatingGameType != "rps" || w.Rating <= 1500 || l.Rating >= 1500 || !w.Provisional {
			t.Errorf("%s: ratings %+v and %+v, want rps ratings above and below 1500, provisional", period, w, l)
		}
	}

	// Paging: a page is the same rows as the whole board at its offset.
	whole := a.wholeBoard(t, "/leaderboards/global", "?", nil)
	at := rowOf(t, whole, loser.id).Rank - 1
	if page := a.board(t, fmt.Sprintf("/leaderboards/global?limit=1&offset=%d", at), nil); len(page) != 1 || page[0].UserID != loser.id || page[0].Rank != at+1 {
		t.Errorf("the page at offset %d: %+v, want the loser at rank %d", at, page, at+1)
	}
	if page := a.board(t, "/leaderboards/global?offset=2000", nil); len(page) != 0 {
		t.Errorf("a page past the end: %+v", page)
	}

	for _, bad := range []string{"?period=year", "?period=DAY", "?limit=0", "?limit=201", "?offset=-1", "?offset=2001", "?offset=x"} {
		a.do(t, request{path: "/leaderboards/global" + bad}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	}
}

// A game is in the boards of the periods it finished in: moved back in
// time (and the totals rebuilt from the results) it leaves today's board.
func TestPeriodBoardsHoldTheGamesOfThePeriod(t *testing.T) {
	a := newTestApp(t, nil)
	old, oldLoser, oldGame := a.match(t, `{"rounds": 1}`)
	a.playRPS(t, old, oldLoser, oldGame)
	ctx := context.Background()
	if _, err := a.DB.ExecContext(ctx, `UPDATE player_results SET finished_at = finished_at - interval '40 days' WHERE game_id = ?`, oldGame); err != nil {
		t.Fatal(err)
	}
	if err := ranking.RebuildTotals(ctx, a.DB); err != nil {
		t.Fatal(err)
	}
	recent, recentLoser, recentGame := a.match(t, `{"rounds": 1}`)
	a.playRPS(t, recent, recentLoser, recentGame)
	for _, period := range []string{"day", "week", "month"} {
		rows := a.wholeBoard(t, "/leaderboards/global?period="+period, "&", nil)
		if onBoard(rows, old.id) {
			t.Errorf("%s: a game of 40 days ago is on the board", period)
		}
		if r := rowOf(t, rows, recent.id); r.Wins != 1 {
			t.Errorf("%s: today's winner %+v", period, r)
		}
	}
	if r := rowOf(t, a.wholeBoard(t, "/leaderboards/global?period=all", "&", nil), old.id); r.Wins != 1 || r.GamesPlayed != 1 {
		t.Errorf("all: the old game's winner %+v", r)
	}
}

func TestGameTypeBoardRanksEstablishedRatingsFirst(t *testing.T) {
	a := newTestApp(t, nil)
	winner, loser, game := a.match(t, `{"rounds": 1}`)
	a.playRPS(t, winner, loser, game)
	veteran, rookie, second := a.match(t, `{"rounds": 1}`)
	a.playRPS(t, rookie, veteran, second)
	// A long history settles a rating; here the veteran's is settled by
	// hand, below the provisional winners' ratings.
	if _, err := a.DB.ExecContext(context.Background(),
		`UPDATE ratings SET rating = 1200, deviation = 60 WHERE user_id = ? AND game_type = 'rps'`, veteran.id); err != nil {
		t.Fatal(err)
	}

	rows := a.wholeBoard(t, "/leaderboards/game/rps", "?", nil)
	a.wantNoBots(t, rows)
	w, l, v := rowOf(t, rows, winner.id), rowOf(t, rows, loser.id), rowOf(t, rows, veteran.id)
	if w.Rating <= 1500 || l.Rating >= 1500 || w.Rating-1500 < 1 || 1500-l.Rating < 1 {
		t.Errorf("after one game from 1500: winner %.2f, loser %.2f, want above and below", w.Rating, l.Rating)
	}
	if w.RatingDeviation >= 350 || !w.Provisional || !l.Provisional || v.Provisional {
		t.Errorf("deviations: winner %.1f (provisional %v), loser provisional %v, veteran %.1f (provisional %v)",
			w.RatingDeviation, w.Provisional, l.Provisional, v.RatingDeviation, v.Provisional)
	}
	if w.GamesPlayed != 1 || w.Wins != 1 || l.Losses != 1 || w.RatingGameType == nil || *w.RatingGameType != "rps" {
		t.Errorf("the winner's row %+v, the loser's %+v", w, l)
	}
	if v.Rank > w.Rank {
		t.Errorf("the established veteran (%.0f) is ranked %d, below the provisional winner (%.0f) at %d", v.Rating, v.Rank, w.Rating, w.Rank)
	}
	for i := 1; i < len(rows); i++ {
		p, r := rows[i-1], rows[i]
		if (p.Provisional && !r.Provisional) || (p.Provisional == r.Provisional && p.Rating < r.Rating) {
			t.Fatalf("rank %d (%.1f, provisional %v) is above rank %d (%.1f, provisional %v)",
				p.Rank, p.Rating, p.Provisional, r.Rank, r.Rating, r.Provisional)
		}
		if r.Provisional != (r.RatingDeviation > 110) {
			t.Fatalf("rank %d: provisional %v with deviation %.1f", r.Rank, r.Provisional, r.RatingDeviation)
		}
	}

	if rows := a.board(t, "/leaderboards/game/connect4", nil); rows == nil {
		t.Error("connect4's board is not an array")
	}
	a.do(t, request{path: "/leaderboards/game/chess"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
	a.do(t, request{path: "/leaderboards/game/rps?limit=500"}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")

	// The profile's chart: one point per game, ending at the board's rating.
	r := a.do(t, request{path: "/users/" + winner.id + "/ratings"})
	var ratings []ranking.TypeRating
	if err := json.Unmarshal(r.Body.Bytes(), &ratings); r.Code != 200 || err != nil {
		t.Fatalf("ratings: %d %s", r.Code, r.Body)
	}
	if len(ratings) != 1 || ratings[0].GameType != "rps" || len(ratings[0].History) != 1 ||
		ratings[0].History[0].GameID != game || ratings[0].History[0].Rating != w.Rating || ratings[0].Rating != w.Rating {
		t.Errorf("the winner's ratings %+v, want rps with one point of game %s at %.2f", ratings, game, w.Rating)
	}
	if r := a.do(t, request{path: "/users/" + a.newPlayer(t).id + "/ratings"}); r.Code != 200 || r.Body.String() != "[]\n" {
		t.Errorf("ratings before any game: %d %s", r.Code, r.Body)
	}
	a.do(t, request{path: "/users/00000000-0000-0000-0000-000000000000/ratings"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
}

func TestFriendsBoard(t *testing.T) {
	a := newTestApp(t, nil)
	ann, bob, game := a.match(t, `{"rounds": 1}`)
	a.playRPS(t, ann, bob, game)
	cat, dan := a.newPlayer(t), a.newPlayer(t)
	befriend := func(x, y player) {
		a.do(t, request{method: http.MethodPost, path: "/friends/" + y.id, header: x.auth})
		if r := a.do(t, request{method: http.MethodPost, path: "/friends/" + x.id, header: y.auth}); r.json(t)["status"] != "friends" {
			t.Fatalf("befriend: %s", r.Body)
		}
	}
	befriend(bob, ann)
	befriend(bob, dan)
	// Cat played Ann but is nobody's friend.
	a.do(t, request{method: http.MethodPost, path: "/friends/" + ann.id, header: cat.auth})

	rows := a.board(t, "/leaderboards/friends", bob.auth)
	if len(rows) != 3 || rows[0].UserID != ann.id || rows[0].Wins != 1 || rows[0].Rank != 1 {
		t.Fatalf("Bob's friends board: %+v, want Ann first with her win, then Dan and Bob", rows)
	}
	// Dan, who never played, ties with Bob at net 0 and no wins: the tie
	// goes by user id.
	d, b := rowOf(t, rows, dan.id), rowOf(t, rows, bob.id)
	if d.GamesPlayed != 0 || d.RatingGameType != nil || d.Rating != 1500 || d.RatingDeviation != 350 || !d.Provisional {
		t.Errorf("Dan, who never played: %+v, want zeros and 1500 ± 350", d)
	}
	if b.Losses != 1 || b.RatingGameType == nil || b.Rating >= 1500 {
		t.Errorf("Bob: %+v, want his loss and his rps rating", b)
	}
	if (d.Rank == 2) != (dan.id < bob.id) || d.Rank+b.Rank != 5 {
		t.Errorf("Dan at %d and Bob at %d, want 2 and 3 by user id", d.Rank, b.Rank)
	}
	if page := a.board(t, "/leaderboards/friends?period=day&limit=1&offset=1", bob.auth); len(page) != 1 || page[0].UserID != rows[1].UserID || page[0].Rank != 2 {
		t.Errorf("the second page of one: %+v, want %+v", page, rows[1])
	}
	if rows := a.board(t, "/leaderboards/friends", cat.auth); len(rows) != 1 || rows[0].UserID != cat.id {
		t.Errorf("Cat, with no friends, sees %+v, want herself", rows)
	}
	a.do(t, request{path: "/leaderboards/friends"}).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	a.do(t, request{path: "/leaderboards/friends?period=year", header: bob.auth}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
}

func TestBotsAreNeverOnLeaderboards(t *testing.T) {
	a := newTestApp(t, nil)
	person, bot, game := a.match(t, `{"rounds": 1}`)
	a.playRPS(t, bot, person, game)
	if !onBoard(a.wholeBoard(t, "/leaderboards/global", "?", nil), bot.id) {
		t.Fatal("the future bot is not on the board as a person")
	}
	a.do(t, request{method: http.MethodPost, path: "/friends/" + bot.id, header: person.auth})
	a.do(t, request{method: http.MethodPost, path: "/friends/" + person.id, header: bot.auth})
	if p := a.do(t, request{path: "/users/" + bot.id}).json(t); p["isBot"] != false {
		t.Fatalf("a person's profile: isBot %v", p["isBot"])
	}

	// A demo player is a user marked as a bot (cmd/server/bots creates them so).
	if _, err := a.DB.ExecContext(context.Background(), "UPDATE users SET bot = true WHERE id = ?", bot.id); err != nil {
		t.Fatal(err)
	}
	if p := a.do(t, request{path: "/users/" + bot.id}).json(t); p["isBot"] != true {
		t.Fatalf("a bot's profile: isBot %v", p["isBot"])
	}
	for _, path := range []string{"/leaderboards/global", "/leaderboards/global?period=day", "/leaderboards/game/rps"} {
		sep := "?"
		if path != "/leaderboards/global" && path != "/leaderboards/game/rps" {
			sep = "&"
		}
		rows := a.wholeBoard(t, path, sep, nil)
		a.wantNoBots(t, rows)
		if !onBoard(rows, person.id) {
			t.Errorf("%s: the bot's opponent is gone too", path)
		}
	}
	if rows := a.board(t, "/leaderboards/friends", person.auth); len(rows) != 1 || rows[0].UserID != person.id {
		t.Errorf("friends board with a bot friend: %+v", rows)
	}
	// Its games still rate its opponents: the person lost to a rated player.
	if r := rowOf(t, a.wholeBoard(t, "/leaderboards/game/rps", "?", nil), person.id); r.Rating >= 1500 {
		t.Errorf("the bot's opponent's rating %.1f, want below 1500 after losing", r.Rating)
	}
}

// TestRatingsStayConsistentOverRandomGames plays random games (random
// moves, resignations, stakes, one abandoned game) among a few players
// and checks what every completed game leaves behind: one result and one
// rating point per player, ratings rows that count them and end at the
// last point, and leaderboard totals equal to a rebuild from the results.
func TestRatingsStayConsistentOverRandomGames(t *testing.T) {
	a := newTestApp(t, nil)
	rng := rand.New(rand.NewPCG(7, uint64(len(t.Name()))))
	const stake = 100_000
	pool := []player{a.depositor(t, 3_000_000), a.depositor(t, 3_000_000), a.depositor(t, 3_000_000), a.depositor(t, 3_000_000)}
	moves := []string{"rock", "paper", "scissors"}
	var completed, cancelled []string
	for i := 0; i < 24; i++ {
		perm := rng.Perm(len(pool))
		p1, p2 := pool[perm[0]], pool[perm[1]]
		s := int64(0)
		if rng.IntN(2) == 0 {
			s = stake
		}
		settings := fmt.Sprintf(`{"rounds": %d}`, 1+2*rng.IntN(2))
		if i == 5 {
			settings = `{"rounds": 1, "roundSeconds": 3}`
		}
		lobby := a.lobby(t, p1, fmt.Sprintf(`{"gameType": "rps", "stakeMinor": %d, "settings": %s}`, s, settings))
		a.join(t, p1, lobby)
		game := a.join(t, p2, lobby)["gameId"].(string)
		if i == 5 {
			// Nobody moves: the round times out, the game ends abandoned
			// (cancelled), and is no result.
			waitFor(t, func() bool { return a.do(t, request{path: "/games/" + game}).json(t)["status"] == "cancelled" })
			cancelled = append(cancelled, game)
			continue
		}
		for status := "active"; status == "active"; {
			if rng.IntN(8) == 0 {
				a.act(t, []player{p1, p2}[rng.IntN(2)], game, `{"type": "resign"}`)
			} else {
				a.act(t, p1, game, `{"type": "move", "move": "`+moves[rng.IntN(3)]+`"}`)
				a.act(t, p2, game, `{"type": "move", "move": "`+moves[rng.IntN(3)]+`"}`)
			}
			status, _ = a.do(t, request{path: "/games/" + game}).json(t)["status"].(string)
		}
		completed = append(completed, game)
	}

	ctx := context.Background()
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := a.DB.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	for _, g := range completed {
		if n := count("SELECT count(*) FROM player_results WHERE game_id = ?", g); n != 2 {
			t.Errorf("completed game %s has %d results, want 2", g, n)
		}
		if n := count("SELECT count(*) FROM rating_history WHERE game_id = ?", g); n != 2 {
			t.Errorf("completed game %s has %d rating points, want 2", g, n)
		}
		// What the players got back is the pot less the fee: their nets
		// sum to minus the fee.
		if n := count(`SELECT count(*) FROM (SELECT 1 FROM player_results AS r JOIN games AS g ON g.id = r.game_id WHERE r.game_id = ?
			GROUP BY g.id HAVING sum(r.net_minor) <> -coalesce((g.result->>'feeMinor')::bigint, 0)) AS bad`, g); n != 0 {
			t.Errorf("the nets of game %s do not sum to minus its fee", g)
		}
	}
	for _, g := range cancelled {
		if n := count("SELECT count(*) FROM player_results WHERE game_id = ?", g) + count("SELECT count(*) FROM rating_history WHERE game_id = ?", g); n != 0 {
			t.Errorf("cancelled game %s left %d results and rating points", g, n)
		}
	}
	// The players' ratings rows count their results and rating points and
	// hold the last point's rating.
	ids := make([]string, len(pool))
	for i, p := range pool {
		ids[i] = p.id
	}
	if n := count(`SELECT count(*) FROM ratings AS r
		LEFT JOIN LATERAL (SELECT count(*) AS games, count(*) FILTER (WHERE outcome = 'win') AS wins,
			count(*) FILTER (WHERE outcome = 'loss') AS losses, count(*) FILTER (WHERE outcome = 'draw') AS draws,
			coalesce(sum(net_minor), 0) AS net FROM player_results AS p WHERE p.user_id = r.user_id AND p.game_type = r.game_type) AS p ON true
		LEFT JOIN LATERAL (SELECT count(*) AS points FROM rating_history AS h WHERE h.user_id = r.user_id AND h.game_type = r.game_type) AS h ON true
		LEFT JOIN LATERAL (SELECT rating, deviation FROM rating_history AS h WHERE h.user_id = r.user_id AND h.game_type = r.game_type
			ORDER BY recorded_at DESC LIMIT 1) AS last ON true
		WHERE ((r.games, r.wins, r.losses, r.draws, r.net_minor) <> (p.games, p.wins, p.losses, p.draws, p.net)
			OR r.games <> h.points OR (r.rating, r.deviation) <> (last.rating, last.deviation)) AND r.user_id IN (?)`, bun.List(ids)); n != 0 {
		t.Errorf("%d ratings rows disagree with their results or rating history", n)
	}
	if n := count(`SELECT count(*) FROM player_results AS p WHERE NOT EXISTS
		(SELECT 1 FROM ratings AS r WHERE r.user_id = p.user_id AND r.game_type = p.game_type)`); n != 0 {
		t.Errorf("%d results of players without a rating", n)
	}
	// The totals kept game by game are what a rebuild from the results
	// gives (compared on one connection, which the temporary table lives on).
	conn, err := a.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE kept AS SELECT * FROM leaderboard_totals"); err != nil {
		t.Fatal(err)
	}
	if err := ranking.RebuildTotals(ctx, conn); err != nil {
		t.Fatal(err)
	}
	var differ int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM ((TABLE kept EXCEPT TABLE leaderboard_totals)
		UNION ALL (TABLE leaderboard_totals EXCEPT TABLE kept)) AS d`).Scan(&differ); err != nil {
		t.Fatal(err)
	}
	if differ != 0 {
		t.Errorf("%d leaderboard totals differ from a rebuild from the results", differ)
	}
	if n := count("SELECT count(*) FROM leaderboard_totals WHERE period = 'all'"); n != count("SELECT count(DISTINCT user_id) FROM player_results") {
		t.Errorf("%d all-time totals for %d players with results", n, count("SELECT count(DISTINCT user_id) FROM player_results"))
	}
}
