package handlers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// logRecord is what the tests read of a record of the games log.
type logRecord struct {
	Index   int64  `json:"index"`
	GameID  string `json:"gameId"`
	Outcome struct {
		Status       string  `json:"status"`
		WinnerUserID *string `json:"winnerUserId"`
		Reason       string  `json:"reason"`
	} `json:"outcome"`
	Events []struct {
		Seq   int    `json:"seq"`
		Event string `json:"event"`
	} `json:"events"`
	Money struct {
		PotMinor  int64  `json:"potMinor"`
		FeeMinor  int64  `json:"feeMinor"`
		Integrity string `json:"integrity"`
		Payouts   []struct {
			UserID      string `json:"userId"`
			AmountMinor int64  `json:"amountMinor"`
			Kind        string `json:"kind"`
		} `json:"payouts"`
	} `json:"money"`
}

// sequence logs everything queued, as the workers would.
func (a *testApp) sequence(t testing.TB) {
	t.Helper()
	for {
		n, err := a.GamesLog.Sequence(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// checkpoint reads the log's checkpoint and verifies it with the key the
// server publishes.
func checkpointOf(t testing.TB, get func(path string) []byte) tlog.Tree {
	t.Helper()
	verifier, err := note.NewVerifier(strings.TrimSpace(string(get("/transparency/key"))))
	if err != nil {
		t.Fatalf("the published key: %v", err)
	}
	n, err := note.Open(get("/transparency/checkpoint"), note.VerifierList(verifier))
	if err != nil {
		t.Fatalf("the checkpoint does not verify with the published key: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" || !strings.HasSuffix(lines[0], "/games-log") {
		t.Fatalf("checkpoint text %q: want origin, size, root hash", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		t.Fatalf("checkpoint size %q: %v", lines[1], err)
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		t.Fatalf("checkpoint root %q: %v", lines[2], err)
	}
	return tlog.Tree{N: size, Hash: tlog.Hash(root)}
}

// gameRecord reads a game's record and checks its inclusion proof in the
// checkpoint it came with.
func (a *testApp) gameRecord(t *testing.T, game string) logRecord {
	t.Helper()
	r := a.do(t, request{method: "GET", path: "/games/" + game + "/record"})
	if r.Code != 200 {
		t.Fatalf("GET /games/%s/record: %d %s", game, r.Code, r.Body)
	}
	var p struct {
		Index          int64    `json:"index"`
		Record         []byte   `json:"record"`
		Checkpoint     string   `json:"checkpoint"`
		InclusionProof [][]byte `json:"inclusionProof"`
	}
	if err := json.Unmarshal(r.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	tree := checkpointOf(t, func(path string) []byte {
		if path == "/transparency/checkpoint" {
			return []byte(p.Checkpoint)
		}
		return a.do(t, request{method: "GET", path: path}).Body.Bytes()
	})
	proof := make(tlog.RecordProof, len(p.InclusionProof))
	for i, h := range p.InclusionProof {
		proof[i] = tlog.Hash(h)
	}
	if err := tlog.CheckRecord(proof, tree.N, tree.Hash, p.Index, tlog.RecordHash(p.Record)); err != nil {
		t.Fatalf("game %s: record %d is not in the checkpoint of %d records: %v", game, p.Index, tree.N, err)
	}
	if byIndex := a.do(t, request{method: "GET", path: fmt.Sprintf("/transparency/records/%d", p.Index)}); !bytes.Equal(byIndex.Body.Bytes(), p.Record) {
		t.Errorf("record %d by index is not the game's record bytes", p.Index)
	}
	var rec logRecord
	if err := json.Unmarshal(p.Record, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.GameID != game || rec.Index != p.Index {
		t.Errorf("record %d names game %s at index %d, want %s", p.Index, rec.GameID, rec.Index, game)
	}
	return rec
}

// A game is in the public log once its money is final, exactly once,
// with a proof anyone can check: a free game at its end; a staked game
// held for review only when an admin releases it, with what its bets and
// market paid.
func TestEveryGameWhoseMoneyIsFinalIsLoggedOnceWithAProof(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)

	p1, p2, free := a.match(t, `{"rounds": 1}`)
	a.act(t, p1, free, `{"type": "resign"}`)
	h := a.holdAGame(t, resign(a, t))
	a.do(t, request{method: "GET", path: "/games/" + free + "/record"}).wantError(t, 404, "NOT_FOUND")
	a.sequence(t)

	rec := a.gameRecord(t, free)
	if rec.Outcome.Status != "completed" || rec.Outcome.WinnerUserID == nil || *rec.Outcome.WinnerUserID != p2.id || rec.Outcome.Reason != "resign" {
		t.Errorf("free game's outcome %+v, want completed, won by %s on resign", rec.Outcome, p2.id)
	}
	if len(rec.Money.Payouts) != 0 || rec.Money.Integrity != "none" {
		t.Errorf("free game's money %+v, want no payouts, integrity none", rec.Money)
	}
	if last := rec.Events[len(rec.Events)-1]; last.Event != "game:completed" {
		t.Errorf("the record's events end with %s, want game:completed", last.Event)
	}
	a.do(t, request{method: "GET", path: "/games/" + h.game + "/record"}).wantError(t, 404, "NOT_FOUND")
	if page := a.do(t, request{path: "/game/" + free}).Body.String(); !strings.Contains(page, fmt.Sprintf("Recorded in the public log (record %d):", rec.Index)) {
		t.Errorf("the game's page does not say which record of the log holds it: %s", section(page, "result"))
	}

	if r := a.decideReview(t, admin, h.game, "release", "reviewed: the resignation stands"); r.Code != 200 {
		t.Fatalf("release: %d %s", r.Code, r.Body)
	}
	a.sequence(t)
	a.sequence(t) // nothing left to log
	held := a.gameRecord(t, h.game)
	if held.Index <= rec.Index || held.Money.Integrity != "released" {
		t.Errorf("held game's record %d, integrity %q: want after %d, released", held.Index, held.Money.Integrity, rec.Index)
	}
	kinds := map[string]int64{}
	for _, p := range held.Money.Payouts {
		kinds[p.Kind] += p.AmountMinor
	}
	if kinds["pot"] != 1_980_000 || kinds["bet"] == 0 || kinds["market"] != 1_000_000 {
		t.Errorf("held game's payouts by kind %v, want the pot's 1980000, the bets' and the market's 1000000", kinds)
	}
	for _, g := range []string{free, h.game} {
		var n int
		if err := a.DB.NewRaw("SELECT count(*) FROM games_log WHERE game_id = ?", g).Scan(context.Background(), &n); err != nil || n != 1 {
			t.Errorf("game %s is in the log %d times (%v), want once", g, n, err)
		}
	}
}

// tileReader reads the log's tiles over HTTP, as any tlog client would.
type tileReader struct {
	t    testing.TB
	base string
}

func (r tileReader) Height() int { return 8 }

func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tile := range tiles {
		res, err := http.Get(r.base + "/transparency/" + tile.Path())
		if err != nil {
			return nil, err
		}
		out[i], err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			return nil, fmt.Errorf("GET tile %s: %d %v", tile.Path(), res.StatusCode, err)
		}
	}
	return out, nil
}

func (r tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// The log read with nothing of the platform's code: its checkpoints and
// tiles over HTTP, checked by tlog's own tile reader, inclusion and
// consistency proofs.
func TestTheLogIsCheckedByTlogsOwnClientOverHTTP(t *testing.T) {
	a := newTestApp(t, map[string]string{"WORKERS": "false"})
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	get := func(path string) []byte {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		return b
	}
	play := func(n int) {
		for range n {
			p1, _, game := a.match(t, `{"rounds": 1}`)
			a.act(t, p1, game, `{"type": "resign"}`)
		}
		a.sequence(t)
	}
	play(3)
	first := checkpointOf(t, get)
	play(300) // past the first full tile of 256 records
	second := checkpointOf(t, get)
	if second.N < first.N+300 {
		t.Fatalf("checkpoint sizes %d then %d, want 300 more", first.N, second.N)
	}
	hashes := tlog.TileHashReader(second, tileReader{t: t, base: srv.URL})
	for _, i := range []int64{0, first.N - 1, 255, 256, second.N - 1} {
		proof, err := tlog.ProveRecord(second.N, i, hashes)
		if err != nil {
			t.Fatalf("prove record %d from the tiles: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, second.N, second.Hash, i, tlog.RecordHash(get(fmt.Sprintf("/transparency/records/%d", i)))); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
	proof, err := tlog.ProveTree(second.N, first.N, hashes)
	if err != nil {
		t.Fatalf("prove the tree of %d from the tiles: %v", first.N, err)
	}
	if err := tlog.CheckTree(proof, second.N, second.Hash, first.N, first.Hash); err != nil {
		t.Errorf("the checkpoint of %d records is not consistent with the one of %d: %v", second.N, first.N, err)
	}
}

// A queued game the log cannot build a record of (here one that has not
// ended, queued by a bug) is held back with the reason, and the games
// queued after it are logged all the same.
func TestAGameTheLogCannotRecordDoesNotHoldUpTheOthers(t *testing.T) {
	a := newTestApp(t, noWorkers)
	ctx := context.Background()
	_, _, active := a.match(t, `{"rounds": 3}`)
	if _, err := a.DB.ExecContext(ctx, "INSERT INTO games_log_queue (game_id, integrity, queued_at) VALUES (?, 'none', now() - interval '1 hour')",
		active); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.DB.ExecContext(context.Background(), "DELETE FROM games_log_queue WHERE game_id = ?", active)
	}) //nolint:errcheck // the package's database
	p1, _, free := a.match(t, `{"rounds": 1}`)
	a.act(t, p1, free, `{"type": "resign"}`)
	a.sequence(t)
	a.gameRecord(t, free)
	var reason string
	if err := a.DB.NewRaw("SELECT held_back_reason FROM games_log_queue WHERE game_id = ?", active).Scan(ctx, &reason); err != nil ||
		!strings.Contains(reason, "has not ended") {
		t.Errorf("the game that cannot be logged is held back for %q (%v), want that it has not ended", reason, err)
	}
}
