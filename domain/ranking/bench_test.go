package ranking_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain/ranking"
)

// Seed sizes of BenchmarkLeaderboards.
const (
	benchUsers   = 100_000
	benchGames   = 1_000_000
	benchBots    = 20
	benchFriends = 10 // per user, both directions stored
	benchDays    = 90 // games end over the last benchDays days
)

// BenchmarkLeaderboards seeds a database of its own with 100,000 users,
// 1,000,000 completed games (2,000,000 results over 90 days, free and
// staked, rps and connect4, a few draws), their ratings, leaderboard
// totals and ten friends per user, then times each leaderboard read and
// reports its p50 and p99 over b.N reads. Run it with
//
//	go test ./domain/ranking -run '^$' -bench Leaderboards -benchtime 400x
//
// Seeding takes a minute or two and only happens when -bench selects it.
func BenchmarkLeaderboards(b *testing.B) {
	bdb, err := db.Open(b.Context(), dbtest.Fresh(b))
	if err != nil {
		b.Fatal(err)
	}
	defer bdb.Close()
	start := time.Now()
	seed(b, bdb)
	b.Logf("seeded in %s", time.Since(start).Round(time.Second))
	s := ranking.New(bdb, func() time.Time { return time.Now().UTC() })
	var users []string
	if err := bdb.NewRaw("SELECT id FROM seed_users ORDER BY n").Scan(b.Context(), &users); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	first := ranking.Page{Limit: 50}
	cases := []struct {
		name string
		read func(ctx context.Context) ([]ranking.Row, error)
	}{
		{"global/all", func(ctx context.Context) ([]ranking.Row, error) { return s.Global(ctx, ranking.All, first) }},
		{"global/month", func(ctx context.Context) ([]ranking.Row, error) { return s.Global(ctx, ranking.Month, first) }},
		{"global/week", func(ctx context.Context) ([]ranking.Row, error) { return s.Global(ctx, ranking.Week, first) }},
		{"global/day", func(ctx context.Context) ([]ranking.Row, error) { return s.Global(ctx, ranking.Day, first) }},
		{"global/all/200-at-max-offset", func(ctx context.Context) ([]ranking.Row, error) {
			return s.Global(ctx, ranking.All, ranking.Page{Limit: 200, Offset: ranking.MaxOffset})
		}},
		{"game/rps", func(ctx context.Context) ([]ranking.Row, error) { return s.GameType(ctx, "rps", first) }},
		{"game/connect4/200-at-max-offset", func(ctx context.Context) ([]ranking.Row, error) {
			return s.GameType(ctx, "connect4", ranking.Page{Limit: 200, Offset: ranking.MaxOffset})
		}},
		{"friends/all", func(ctx context.Context) ([]ranking.Row, error) {
			return s.Friends(ctx, users[rng.IntN(len(users))], ranking.All, first)
		}},
		{"friends/week", func(ctx context.Context) ([]ranking.Row, error) {
			return s.Friends(ctx, users[rng.IntN(len(users))], ranking.Week, first)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				rows, err := c.read(b.Context())
				took = append(took, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) == 0 {
					b.Fatalf("%s: an empty board", c.name)
				}
			}
			slices.Sort(took)
			ms := func(q float64) float64 {
				return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}

// seed fills bdb set-based: every table in one INSERT ... SELECT over
// generate_series, the totals by RebuildTotals.
func seed(b *testing.B, bdb *bun.DB) {
	b.Helper()
	ctx := b.Context()
	steps := []struct{ what, sql string }{
		{"users", fmt.Sprintf(`CREATE TABLE seed_users AS
			SELECT n, gen_random_uuid() AS id FROM generate_series(0, %d) AS n`, benchUsers-1)},
		{"users index", `ALTER TABLE seed_users ADD PRIMARY KEY (n)`},
		{"users", fmt.Sprintf(`INSERT INTO users (id, wallet_address, username, bot, created_at, updated_at)
			SELECT id, 'seed' || n, 'seed_' || n, n < %d, now(), now() FROM seed_users`, benchBots)},
		// Game g is between seats a and b, two different users picked by
		// multiplicative hashing; a third are staked; one in twenty is a draw.
		{"games", fmt.Sprintf(`CREATE TABLE seed_games AS
			SELECT gen_random_uuid() AS id, g,
				CASE WHEN g %% 3 = 0 THEN 'connect4' ELSE 'rps' END AS game_type,
				CASE WHEN g %% 3 = 1 THEN (1 + g %% 20) * 100000 ELSE 0 END AS stake,
				(g * 7919) %% %[1]d AS a, ((g * 7919) %% %[1]d + 1 + (g * 104729) %% (%[1]d - 1)) %% %[1]d AS b,
				CASE WHEN g %% 20 = 0 THEN 'draw' WHEN g %% 2 = 0 THEN 'a' ELSE 'b' END AS winner,
				now() - (g::double precision / %[2]d) * interval '%[3]d days' AS ended
			FROM generate_series(0::bigint, %[2]d - 1) AS g`, benchUsers, benchGames, benchDays)},
		{"games", `INSERT INTO games (id, game_type, stake_minor, settings, status, state, created_at, ended_at)
			SELECT id, game_type, stake, '{}', 'completed', '{}', ended, ended FROM seed_games`},
		{"results", `INSERT INTO player_results (game_id, user_id, game_type, outcome, stake_minor, net_minor, finished_at)
			SELECT sg.id, u.id, sg.game_type,
				CASE WHEN sg.winner = 'draw' THEN 'draw' WHEN sg.winner = seat.side THEN 'win' ELSE 'loss' END,
				sg.stake,
				CASE WHEN sg.winner = 'draw' THEN 0 WHEN sg.winner = seat.side THEN sg.stake - sg.stake / 50 ELSE -sg.stake END,
				sg.ended
			FROM seed_games AS sg
			CROSS JOIN LATERAL (VALUES ('a', sg.a), ('b', sg.b)) AS seat (side, n)
			JOIN seed_users AS u ON u.n = seat.n`},
		// Ratings spread around 1500; a quarter still provisional.
		{"ratings", `INSERT INTO ratings (user_id, game_type, rating, deviation, volatility, games, wins, losses, draws, net_minor, updated_at)
			SELECT user_id, game_type, 1500 + 400 * (random() - 0.5) + 200 * (random() - 0.5),
				CASE WHEN random() < 0.25 THEN 111 + 239 * random() ELSE 45 + 65 * random() END, 0.06,
				count(*), count(*) FILTER (WHERE outcome = 'win'), count(*) FILTER (WHERE outcome = 'loss'),
				count(*) FILTER (WHERE outcome = 'draw'), sum(net_minor), max(finished_at)
			FROM player_results GROUP BY user_id, game_type`},
		{"friends", fmt.Sprintf(`INSERT INTO friends (user_id, friend_id, since)
			SELECT DISTINCT x.id, y.id, now() FROM seed_users AS u
			CROSS JOIN generate_series(1, %d) AS k
			CROSS JOIN LATERAL (VALUES (u.n, (u.n + k * 7919) %% %[2]d), ((u.n + k * 7919) %% %[2]d, u.n)) AS pair (p, q)
			JOIN seed_users AS x ON x.n = pair.p JOIN seed_users AS y ON y.n = pair.q`, benchFriends/2, benchUsers)},
	}
	for _, st := range steps {
		t0 := time.Now()
		if _, err := bdb.ExecContext(ctx, st.sql); err != nil {
			b.Fatalf("seed %s: %v", st.what, err)
		}
		b.Logf("seed %s: %s", st.what, time.Since(t0).Round(time.Millisecond))
	}
	if err := ranking.RebuildTotals(ctx, bdb); err != nil {
		b.Fatal(err)
	}
	// The bots win the most, so that every board has them to leave out.
	if _, err := bdb.ExecContext(ctx, `UPDATE leaderboard_totals SET net_minor = net_minor + 1000000000000
		WHERE user_id IN (SELECT id FROM users WHERE bot)`); err != nil {
		b.Fatal(err)
	}
	if _, err := bdb.ExecContext(ctx, `UPDATE ratings SET rating = 3000, deviation = 50
		WHERE user_id IN (SELECT id FROM users WHERE bot)`); err != nil {
		b.Fatal(err)
	}
	if _, err := bdb.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	var counts string
	if err := bdb.QueryRowContext(ctx, `SELECT format('%s results, %s ratings, %s totals (%s day rows today), %s friendships',
		(SELECT count(*) FROM player_results), (SELECT count(*) FROM ratings), (SELECT count(*) FROM leaderboard_totals),
		(SELECT count(*) FROM leaderboard_totals WHERE period = 'day' AND starts = (now() AT TIME ZONE 'UTC')::date),
		(SELECT count(*) FROM friends))`).Scan(&counts); err != nil {
		b.Fatal(err)
	}
	b.Log(counts)
}
