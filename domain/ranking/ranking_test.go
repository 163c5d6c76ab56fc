package ranking_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/ranking"
	"wager/domain/rating"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// newUser inserts a user and returns its id.
func newUser(t testing.TB, bdb *bun.DB) string {
	t.Helper()
	id := uuid.NewString()
	if _, err := bdb.ExecContext(t.Context(), "INSERT INTO users (id, wallet_address, username) VALUES (?, ?, ?)",
		id, "w"+id, "u"+id[:8]); err != nil {
		t.Fatal(err)
	}
	return id
}

// finish records a game between a and b that ended at at, as the game
// service does: winner "" is a draw; payout is what the winner was paid.
func finish(t testing.TB, s *ranking.Service, bdb *bun.DB, status string, a, b, winner string, stake, payout int64, at time.Time) game.Game {
	t.Helper()
	id := uuid.NewString()
	if _, err := bdb.ExecContext(t.Context(), `INSERT INTO games (id, game_type, stake_minor, settings, status, state, created_at)
		VALUES (?, 'rps', ?, '{}', 'active', '{}', ?)`, id, stake, at); err != nil {
		t.Fatal(err)
	}
	res := game.Result{Settlement: game.Settlement{PayoutMinor: payout}}
	if winner != "" {
		res.WinnerID = &winner
	}
	g := game.Game{ID: id, GameType: "rps", StakeMinor: stake, Status: status, Players: []string{a, b}, Result: &res, EndedAt: &at}
	record(t, s, bdb, g)
	return g
}

// record tells s of a finished game in a transaction, as the game service
// does, and returns the changes it answered.
func record(t testing.TB, s *ranking.Service, bdb *bun.DB, g game.Game) []ranking.Change {
	t.Helper()
	o := rules.Outcome{Done: true}
	if g.Result.WinnerID != nil {
		o.Winner = *g.Result.WinnerID
	}
	var changes []ranking.Change
	err := db.Transact(t.Context(), bdb, func(ctx context.Context, tx db.Tx) error {
		e := &game.Ending{Tx: tx, Game: g, Outcome: o, Reads: &db.Reads{}}
		write, err := s.ReadEnd(ctx, e)
		if err != nil || write == nil {
			return err
		}
		if err := e.Reads.Run(ctx, tx); err != nil {
			return err
		}
		err = write(ctx, e)
		changes = e.Ratings
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

func ids(rows []ranking.Row) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.UserID)
	}
	return out
}

// TestPeriodBoardsFollowTheCalendar records games at chosen times and
// reads the boards on a Wednesday: today, this week (from Monday), this
// month, and ever.
func TestPeriodBoardsFollowTheCalendar(t *testing.T) {
	bdb := dbtest.DB(t)
	now := time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC) // a Wednesday
	s := ranking.New(bdb, func() time.Time { return now })
	a, b, c, d, e := newUser(t, bdb), newUser(t, bdb), newUser(t, bdb), newUser(t, bdb), newUser(t, bdb)

	today := finish(t, s, bdb, game.StatusCompleted, a, b, a, 1000, 1980, now.Add(-time.Hour))
	finish(t, s, bdb, game.StatusCompleted, c, d, c, 0, 0, time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC))        // Monday
	finish(t, s, bdb, game.StatusCompleted, e, a, e, 100, 198, time.Date(2026, 3, 8, 23, 59, 59, 0, time.UTC)) // last Sunday
	finish(t, s, bdb, game.StatusCompleted, b, c, "", 500, 0, time.Date(2026, 2, 28, 23, 59, 0, 0, time.UTC))  // last month, a draw
	finish(t, s, bdb, game.StatusCancelled, d, e, "", 0, 0, now.Add(-time.Minute))                             // no result

	want := map[ranking.Period][]string{
		ranking.Day:   {a, b},
		ranking.Week:  {a, c, d, b},
		ranking.Month: {a, e, c, d, b},
		ranking.All:   {a, e, c, d, b},
	}
	ours := map[string]bool{a: true, b: true, c: true, d: true, e: true}
	for period, order := range want {
		rows, err := s.Global(t.Context(), period, ranking.Page{Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range ids(rows) {
			if ours[id] {
				got = append(got, id)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(order) {
			t.Errorf("%s board: got %v, want %v", period, got, order)
		}
	}

	rows, err := s.Global(t.Context(), ranking.All, ranking.Page{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ranking.Row{}
	for _, r := range rows {
		byID[r.UserID] = r
	}
	if r := byID[a]; r.GamesPlayed != 2 || r.Wins != 1 || r.Losses != 1 || r.NetWinningsMinor != 880 {
		t.Errorf("a: %+v, want 2 games, a win and a loss, net 980 - 100", r)
	}
	if r := byID[b]; r.GamesPlayed != 2 || r.Losses != 1 || r.Draws != 1 || r.NetWinningsMinor != -1000 {
		t.Errorf("b: %+v, want 2 games, a loss and a draw (its stake back), net -1000", r)
	}
	if r := byID[d]; r.GamesPlayed != 1 {
		t.Errorf("d: %+v, want the cancelled game not counted", r)
	}

	// Recording the same game again changes nothing (the rebuild below
	// checks the totals).
	record(t, s, bdb, today)
	var n int
	if err := bdb.QueryRowContext(t.Context(), "SELECT count(*) FROM rating_history WHERE user_id = ?", a).Scan(&n); err != nil || n != 2 {
		t.Fatalf("a has %d rating points (%v), want 2", n, err)
	}

	// The calendar arithmetic in Go is PostgreSQL's: a rebuild from the
	// results gives the totals the games added one by one.
	conn, err := bdb.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "CREATE TEMP TABLE kept AS SELECT * FROM leaderboard_totals"); err != nil {
		t.Fatal(err)
	}
	if err := ranking.RebuildTotals(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(t.Context(), `SELECT count(*) FROM ((TABLE kept EXCEPT TABLE leaderboard_totals)
		UNION ALL (TABLE leaderboard_totals EXCEPT TABLE kept)) AS d`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d totals differ from a rebuild (%v)", n, err)
	}
}

// TestPeriodStartIsPostgresDateTrunc checks Period.Start against
// PostgreSQL's date_trunc every 5 hours for two years, across month,
// year and ISO week boundaries.
func TestPeriodStartIsPostgresDateTrunc(t *testing.T) {
	bdb := dbtest.DB(t)
	var rows []struct {
		At    time.Time `bun:"at"`
		Day   time.Time `bun:"day"`
		Week  time.Time `bun:"week"`
		Month time.Time `bun:"month"`
	}
	if err := bdb.NewRaw(`SELECT at, (at AT TIME ZONE 'UTC')::date AS day,
			date_trunc('week', at AT TIME ZONE 'UTC')::date AS week, date_trunc('month', at AT TIME ZONE 'UTC')::date AS month
		FROM generate_series(timestamptz '2025-12-25 01:30:00+00', '2027-12-31', interval '5 hours') AS at`).Scan(t.Context(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 3000 {
		t.Fatalf("only %d times", len(rows))
	}
	for _, r := range rows {
		for p, want := range map[ranking.Period]time.Time{ranking.Day: r.Day, ranking.Week: r.Week, ranking.Month: r.Month} {
			if got := p.Start(r.At); !got.Equal(want.UTC()) || got.Format(time.DateOnly) != want.UTC().Format(time.DateOnly) {
				t.Fatalf("%s of %s: got %s, PostgreSQL says %s", p, r.At.UTC(), got, want)
			}
		}
	}
}

// TestDrawsMoveRatingsTowardEachOther checks the stored update on a draw
// between a winner and a loser of earlier games.
func TestDrawsMoveRatingsTowardEachOther(t *testing.T) {
	bdb := dbtest.DB(t)
	now := time.Now().UTC()
	s := ranking.New(bdb, func() time.Time { return now })
	strong, weak := newUser(t, bdb), newUser(t, bdb)
	finish(t, s, bdb, game.StatusCompleted, strong, weak, strong, 0, 0, now.Add(-time.Minute))
	ratingOf := func(id string) float64 {
		var r float64
		if err := bdb.QueryRowContext(t.Context(), "SELECT rating FROM ratings WHERE user_id = ? AND game_type = 'rps'", id).Scan(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	s1, w1 := ratingOf(strong), ratingOf(weak)
	if s1 <= 1500 || w1 >= 1500 {
		t.Fatalf("after a win: %.2f and %.2f", s1, w1)
	}
	finish(t, s, bdb, game.StatusCompleted, weak, strong, "", 0, 0, now)
	if s2, w2 := ratingOf(strong), ratingOf(weak); s2 >= s1 || w2 <= w1 {
		t.Errorf("a draw moved %.2f to %.2f and %.2f to %.2f, want them closer", s1, s2, w1, w2)
	}
}

// TestAGameStoresItsRatingsAndHistory checks the stored ratings, tallies
// and history points of two games against the rating maths, and that
// recording a game again changes none of them.
func TestAGameStoresItsRatingsAndHistory(t *testing.T) {
	bdb := dbtest.DB(t)
	now := time.Now().UTC()
	s := ranking.New(bdb, func() time.Time { return now })
	a, b := newUser(t, bdb), newUser(t, bdb)
	g1 := finish(t, s, bdb, game.StatusCompleted, a, b, a, 100, 190, now.Add(-time.Minute))
	g2 := finish(t, s, bdb, game.StatusCompleted, b, a, "", 100, 0, now)
	record(t, s, bdb, g1)
	record(t, s, bdb, g2)

	ra, rb := rating.Default(), rating.Default()
	ra, rb = rating.Game(ra, rb, 1, rating.DefaultTau)
	rb, ra = rating.Game(rb, ra, 0.5, rating.DefaultTau)
	type row struct {
		Rating, Deviation, Volatility float64
		Games, Wins, Losses, Draws    int
		NetMinor                      int64
	}
	for _, c := range []struct {
		id   string
		want rating.Rating
		row  row
	}{
		{a, ra, row{Games: 2, Wins: 1, Draws: 1, NetMinor: 90}},
		{b, rb, row{Games: 2, Losses: 1, Draws: 1, NetMinor: -100}},
	} {
		var got row
		if err := bdb.QueryRowContext(t.Context(), `SELECT rating, deviation, volatility, games, wins, losses, draws, net_minor
			FROM ratings WHERE user_id = ? AND game_type = 'rps'`, c.id).Scan(&got.Rating, &got.Deviation, &got.Volatility,
			&got.Games, &got.Wins, &got.Losses, &got.Draws, &got.NetMinor); err != nil {
			t.Fatal(err)
		}
		want := c.row
		want.Rating, want.Deviation, want.Volatility = c.want.Rating, c.want.Deviation, c.want.Volatility
		if got != want {
			t.Errorf("rating of %s: %+v, want %+v", c.id, got, want)
		}
		var h rating.Rating
		if err := bdb.QueryRowContext(t.Context(), `SELECT rating, deviation, volatility FROM rating_history
			WHERE user_id = ? AND game_id = ?`, c.id, g2.ID).Scan(&h.Rating, &h.Deviation, &h.Volatility); err != nil {
			t.Fatal(err)
		}
		if h != c.want {
			t.Errorf("history of %s: %+v, want %+v", c.id, h, c.want)
		}
		var n int
		if err := bdb.QueryRowContext(t.Context(), "SELECT count(*) FROM rating_history WHERE user_id = ?", c.id).Scan(&n); err != nil || n != 2 {
			t.Errorf("%s has %d rating points (%v), want 2", c.id, n, err)
		}
	}
}

// A game's rating changes run from each player's rating before it (the
// starting rating before their first game) to the one after.
func TestGameChangesAreFromTheRatingBeforeToTheOneAfter(t *testing.T) {
	bdb := dbtest.DB(t)
	now := time.Now().UTC()
	s := ranking.New(bdb, func() time.Time { return now })
	a, b := newUser(t, bdb), newUser(t, bdb)
	g1 := finish(t, s, bdb, game.StatusCompleted, a, b, a, 0, 0, now.Add(-time.Minute))
	g2 := finish(t, s, bdb, game.StatusCompleted, b, a, b, 0, 0, now)
	cancelled := finish(t, s, bdb, game.StatusCancelled, a, b, "", 0, 0, now)

	ra, rb := rating.Default(), rating.Default()
	ra1, rb1 := rating.Game(ra, rb, 1, rating.DefaultTau)
	rb2, ra2 := rating.Game(rb1, ra1, 1, rating.DefaultTau)
	for _, c := range []struct {
		game string
		want map[string]ranking.Change
	}{
		{g1.ID, map[string]ranking.Change{
			a: {UserID: a, Before: ra.Rating, After: ra1.Rating, Provisional: rating.Provisional(ra1)},
			b: {UserID: b, Before: rb.Rating, After: rb1.Rating, Provisional: rating.Provisional(rb1)}}},
		{g2.ID, map[string]ranking.Change{
			a: {UserID: a, Before: ra1.Rating, After: ra2.Rating, Provisional: rating.Provisional(ra2)},
			b: {UserID: b, Before: rb1.Rating, After: rb2.Rating, Provisional: rating.Provisional(rb2)}}},
		{cancelled.ID, map[string]ranking.Change{}},
	} {
		got, err := s.GameChanges(t.Context(), c.game)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("game %s: %d changes %+v, want %d", c.game, len(got), got, len(c.want))
		}
		for _, g := range got {
			if w := c.want[g.UserID]; math.Abs(g.Before-w.Before) > 1e-9 || math.Abs(g.After-w.After) > 1e-9 || g.Provisional != w.Provisional {
				t.Errorf("game %s, %s: %+v, want %+v", c.game, g.UserID, g, w)
			}
		}
	}
	if first := (ranking.Change{Before: ra.Rating, After: ra1.Rating}); first.Delta() <= 0 {
		t.Errorf("the winner's first change is %d, want it up", first.Delta())
	}
}

// Rate answers the changes it records, which game:completed carries to
// the result card: the same GameChanges reads back later.
func TestRateAnswersTheChangesItRecords(t *testing.T) {
	bdb := dbtest.DB(t)
	now := time.Now().UTC()
	s := ranking.New(bdb, func() time.Time { return now })
	a, b := newUser(t, bdb), newUser(t, bdb)
	finish(t, s, bdb, game.StatusCompleted, a, b, a, 0, 0, now.Add(-time.Hour))
	for i, winner := range []string{b, "", a} {
		at := now.Add(time.Duration(i) * time.Minute)
		id := uuid.NewString()
		if _, err := bdb.ExecContext(t.Context(), `INSERT INTO games (id, game_type, stake_minor, settings, status, state, created_at)
			VALUES (?, 'rps', 0, '{}', 'active', '{}', ?)`, id, at); err != nil {
			t.Fatal(err)
		}
		res := game.Result{}
		if winner != "" {
			res.WinnerID = &winner
		}
		answered := record(t, s, bdb, game.Game{ID: id, GameType: "rps", Status: game.StatusCompleted, Players: []string{a, b},
			Result: &res, EndedAt: &at})
		stored, err := s.GameChanges(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(answered) != 2 || len(stored) != 2 {
			t.Fatalf("game %d: answered %+v, stored %+v, want both players'", i, answered, stored)
		}
		for _, w := range stored {
			j := slices.IndexFunc(answered, func(c ranking.Change) bool { return c.UserID == w.UserID })
			if j < 0 || math.Abs(answered[j].Before-w.Before) > 1e-9 || math.Abs(answered[j].After-w.After) > 1e-9 ||
				answered[j].Provisional != w.Provisional || answered[j].Delta() != w.Delta() {
				t.Errorf("game %d: answered %+v, stored %+v", i, answered, stored)
			}
		}
	}
	cancelled := game.Game{ID: uuid.NewString(), GameType: "rps", Status: game.StatusCancelled, Players: []string{a, b},
		Result: &game.Result{}, EndedAt: &now}
	if got := record(t, s, bdb, cancelled); len(got) != 0 {
		t.Errorf("a cancelled game answered changes %+v", got)
	}
}
