package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"wager/db/dbtest"
)

// Random free games, games held for review, releases and voids, and
// crashes at each statement of the log's append (the queue's insert in
// the transaction that makes a game's money final, and each statement of
// the sequencer), over three seeds. After every step: the games logged
// and those still queued are, in this order, exactly the games whose
// money became final, in the order it did (so each is logged once, and
// none before its money is final); every record's inclusion proof checks
// against the latest checkpoint; and each checkpoint extends the one
// before, proved from the tiles as any tlog client would.
func TestTheLogHoldsEveryFinalGameOnceInOrderThroughCrashes(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			adminWallet := newWallet(t)
			a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address(),
				"DATABASE_URL": dbtest.Fresh(t)})
			srv := httptest.NewServer(a.Handler())
			defer srv.Close()
			l := &logRun{a: a, admin: a.admin(t, adminWallet), r: rand.New(rand.NewPCG(seed, 0x6c6f67)), f: newFaults(t, a, ""), base: srv.URL}
			for range 14 {
				switch l.r.IntN(5) {
				case 0, 1:
					l.freeGame(t)
				case 2:
					l.heldGame(t)
				case 3:
					l.decide(t)
				default:
					l.sequence(t)
				}
				l.check(t)
			}
			for len(l.held) > 0 {
				l.decide(t)
			}
			a.sequence(t)
			l.check(t)
			t.Logf("%d games logged, %d crashes", len(l.final), l.crashes)
		})
	}
}

// logRun is one seed's games, and what the log must hold.
type logRun struct {
	a       *testApp
	admin   player
	r       *rand.Rand
	f       *faults
	base    string
	final   []string // the games whose money is final, in the order it became so
	held    []string // games held for review, not decided yet
	last    tlog.Tree
	crashes int
}

// freeGame ends a free game by resignation; a third of the time the
// queue's insert in its end dies first, and the end is refused whole.
func (l *logRun) freeGame(t *testing.T) {
	p1, _, game := l.a.match(t, `{"rounds": 1}`)
	if l.r.IntN(3) == 0 {
		l.f.arm("queueing the game for the log", "INSERT", "games_log_queue", fmt.Sprintf("NEW.game_id = '%s'", game))
		if r := l.a.act(t, p1, game, `{"type": "resign"}`); r.Code != 500 {
			t.Fatalf("resigning while queueing dies: %d %s, want 500", r.Code, r.Body)
		}
		l.f.disarm("games_log_queue")
		l.crashes++
	}
	if r := l.a.act(t, p1, game, `{"type": "resign"}`); r.Code != 200 {
		t.Fatalf("resign: %d %s", r.Code, r.Body)
	}
	l.final = append(l.final, game)
}

// heldGame ends a staked game whose bets and market are held for review:
// its money is not final until an admin decides.
func (l *logRun) heldGame(t *testing.T) {
	l.held = append(l.held, l.a.holdAGame(t, resign(l.a, t)).game)
}

// decide releases or voids a random held game, whose money is then final.
func (l *logRun) decide(t *testing.T) {
	if len(l.held) == 0 {
		return
	}
	i := l.r.IntN(len(l.held))
	game := l.held[i]
	decision := []string{"release", "void"}[l.r.IntN(2)]
	if r := l.a.decideReview(t, l.admin, game, decision, "decided at random by the log's property test"); r.Code != 200 {
		t.Fatalf("%s %s: %d %s", decision, game, r.Code, r.Body)
	}
	l.held = slices.Delete(l.held, i, i+1)
	l.final = append(l.final, game)
}

// sequenceSteps are the sequencer's statements, each of which may die.
var sequenceSteps = []struct{ name, event, table string }{
	{"appending the records", "INSERT", "games_log"},
	{"storing the tree's hashes", "INSERT", "games_log_hashes"},
	{"taking the games off the queue", "DELETE", "games_log_queue"},
}

// sequence runs the sequencer; half the time one of its statements dies
// first, and the log is left as it was.
func (l *logRun) sequence(t *testing.T) {
	if l.r.IntN(2) == 0 {
		step := sequenceSteps[l.r.IntN(len(sequenceSteps))]
		l.f.arm(step.name, step.event, step.table, "true")
		_, err := l.a.GamesLog.Sequence(context.Background())
		l.f.disarm(step.table)
		var queued int
		if qerr := l.a.DB.NewRaw("SELECT count(*) FROM games_log_queue").Scan(context.Background(), &queued); qerr != nil {
			t.Fatal(qerr)
		}
		if queued > 0 && err == nil {
			t.Fatalf("the sequencer ran through while %s died", step.name)
		}
		l.crashes++
	}
	l.a.sequence(t)
}

// check compares the log and its queue with the games whose money is
// final, and proves the records and the checkpoint as a client would.
func (l *logRun) check(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var logged, queued []string
	if err := l.a.DB.NewRaw("SELECT game_id::text FROM games_log ORDER BY idx").Scan(ctx, &logged); err != nil {
		t.Fatal(err)
	}
	if err := l.a.DB.NewRaw("SELECT game_id::text FROM games_log_queue ORDER BY queued_at, game_id").Scan(ctx, &queued); err != nil {
		t.Fatal(err)
	}
	if got := append(slices.Clone(logged), queued...); !slices.Equal(got, l.final) {
		t.Fatalf("logged %v then queued %v, want the games final in order %v", logged, queued, l.final)
	}
	tree := checkpointOf(t, func(path string) []byte { return l.a.do(t, request{path: path}).Body.Bytes() })
	if tree.N != int64(len(logged)) {
		t.Fatalf("the checkpoint has %d records, the log %d", tree.N, len(logged))
	}
	for i, game := range logged {
		var p struct {
			Index          int64    `json:"index"`
			Record         []byte   `json:"record"`
			InclusionProof [][]byte `json:"inclusionProof"`
		}
		if err := json.Unmarshal(l.a.do(t, request{path: "/games/" + game + "/record"}).Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		proof := make(tlog.RecordProof, len(p.InclusionProof))
		for j, h := range p.InclusionProof {
			proof[j] = tlog.Hash(h)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, p.Index, tlog.RecordHash(p.Record)); err != nil || p.Index != int64(i) {
			t.Fatalf("record %d of game %s: index %d, proof %v", i, game, p.Index, err)
		}
	}
	if l.last.N > 0 && l.last.N < tree.N {
		proof, err := tlog.ProveTree(tree.N, l.last.N, tlog.TileHashReader(tree, tileReader{t: t, base: l.base}))
		if err == nil {
			err = tlog.CheckTree(proof, tree.N, tree.Hash, l.last.N, l.last.Hash)
		}
		if err != nil {
			t.Fatalf("the checkpoint of %d records does not extend the one of %d: %v", tree.N, l.last.N, err)
		}
	} else if l.last.N == tree.N && l.last.Hash != tree.Hash {
		t.Fatalf("two trees of %d records", tree.N)
	}
	l.last = tree
}
