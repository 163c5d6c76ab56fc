package wager_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"wager/sdk/verify"
)

// wonGame plays a one-round game that its first player wins, rock over
// scissors, and waits until the public log holds it.
func (s *server) wonGame(t *testing.T) (winner, game string) {
	t.Helper()
	a, b, game := s.match(t, 1)
	move(t, a, game, "rock")
	move(t, b, game, "scissors")
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := s.GamesLog.GameRecord(t.Context(), game); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("game %s is not in the public log 15 s after its end", game)
		}
	}
	return me(t, a).Id, game
}

// tamper runs statements on the server's database as an attacker who
// holds it would, the log's append-only triggers disabled.
func (s *server) tamper(t *testing.T, query string, args ...any) {
	t.Helper()
	ctx := t.Context()
	for _, q := range []string{"ALTER TABLE games_log DISABLE TRIGGER games_log_immutable",
		"ALTER TABLE games_log_hashes DISABLE TRIGGER games_log_hashes_immutable"} {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB.ExecContext(ctx, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// rebuild recomputes the tree's stored hashes from the records as they
// now are: an attacker covering an edit, so that every proof the server
// gives checks out against its new root.
func (s *server) rebuild(t *testing.T) {
	t.Helper()
	var records [][]byte
	if err := s.DB.NewRaw("SELECT record FROM games_log ORDER BY idx").Scan(t.Context(), &records); err != nil {
		t.Fatal(err)
	}
	hashes := map[int64]tlog.Hash{}
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = hashes[id]
		}
		return out, nil
	})
	s.tamper(t, "DELETE FROM games_log_hashes")
	for i, r := range records {
		hs, err := tlog.StoredHashes(int64(i), r, reader)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			id := tlog.StoredHashIndex(0, int64(i)) + int64(j)
			hashes[id] = h
			s.tamper(t, "INSERT INTO games_log_hashes (id, hash) VALUES (?, ?)", id, h[:])
		}
	}
}

func wantRefused(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), what) {
		t.Fatalf("got %v, want the verifier to say %q", err, what)
	}
	t.Logf("refused: %v", err)
}

// The verifier proves a played game from nothing but HTTP, and refuses
// each way an attacker holding the database could rewrite it, saying
// what does not hold: a payout edited by one minor unit, the history
// rewritten to cover the edit, a record removed.
func TestTheVerifierProvesAGameAndRefusesEveryTampering(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	winner, first := s.wonGame(t)
	keep := filepath.Join(t.TempDir(), "verify.json")
	v := &verify.Verifier{URL: s.URL, StateFile: keep}
	c, err := v.Game(ctx, first)
	if err != nil {
		t.Fatalf("the honest game: %v", err)
	}
	if got := c.Record.Outcome.WinnerUserID; got == nil || *got != winner || c.Previous != nil {
		t.Errorf("verified winner %v (previous checkpoint %v), want %s and none seen before", got, c.Previous, winner)
	}
	_, second := s.wonGame(t)
	if c, err := v.Game(ctx, second); err != nil || c.Previous == nil || c.Previous.Tree.N >= c.Checkpoint.Tree.N {
		t.Fatalf("a second game: %+v %v, want it proved consistent with the first checkpoint", c, err)
	}

	// The first game's winner is paid one minor unit more in its record.
	s.tamper(t, `UPDATE games_log SET record = convert_to(replace(convert_from(record, 'UTF8'),
		'"amountMinor":198000', '"amountMinor":198001'), 'UTF8') WHERE game_id = ?`, first)
	_, err = v.Game(ctx, first)
	wantRefused(t, err, "is not what was signed")

	// The tree is rebuilt over the edit: the server's proofs check out
	// again against a new root, but not against the checkpoint kept.
	s.rebuild(t)
	_, third := s.wonGame(t)
	_, err = v.Game(ctx, third)
	wantRefused(t, err, "it rewrote its history")
	// A verifier that never saw the log before cannot tell the history
	// changed, but the edited record does not replay to what it says.
	fresh := &verify.Verifier{URL: s.URL}
	_, err = fresh.Game(ctx, first)
	wantRefused(t, err, "the winner's payout of the pot is 198000, the record says 198001")

	// The last record removed, and the tree rebuilt without it.
	seen := &verify.Verifier{URL: s.URL, StateFile: filepath.Join(t.TempDir(), "verify.json")}
	if _, _, err := seen.Log(ctx); err != nil {
		t.Fatal(err)
	}
	s.tamper(t, "DELETE FROM games_log WHERE game_id = ?", third)
	s.rebuild(t)
	_, _, err = seen.Log(ctx)
	wantRefused(t, err, "it removed records")
}
