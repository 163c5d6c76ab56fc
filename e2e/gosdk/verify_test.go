package wager_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/tlog"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/anchor"
	"wager.example.com/sdk/sumtree"
	"wager.example.com/sdk/verify"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/referrals"
	"wager/domain/reserves"
	"wager/domain/settlement"
)

// wonGame plays a one-round game that its first player wins, rock over
// scissors, and waits until the public log holds it.
func (s *server) wonGame(t *testing.T) (winner, game string) {
	t.Helper()
	return s.wonGameDonated(t, matchStake, 0)
}

// wonGameDonated is wonGame at a stake of stake (0: a free game), with a
// spectator's donation of donated minor units before the first move.
func (s *server) wonGameDonated(t *testing.T, stake, donated int64) (winner, game string) {
	t.Helper()
	a, b, game := s.matchFor(t, 1, stake)
	if donated > 0 {
		fan := s.newClient(t)
		fund(t, fan, donated)
		if d, err := fan.Donate(t.Context(), game, donated); err != nil || d.Refunded {
			t.Fatalf("donate %d: %+v %v", donated, d, err)
		}
	}
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

// Honest games with donations, staked and free, verify. A platform that
// keeps a spectator's donation out of a game's pot, and writes the game's
// record to match (the pot, the fee and the winner's payout all smaller
// by it, so that the pot still adds up), is refused by the donation's own
// event in the record.
func TestTheVerifierRefusesARecordThatKeepsADonationOutOfThePot(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	_, game := s.wonGameDonated(t, matchStake, 30_000)
	v := &verify.Verifier{URL: s.URL}
	c, err := v.Game(ctx, game)
	if err != nil {
		t.Fatalf("the honest game: %v", err)
	}
	// 2 x 0.1 USDC staked and 0.03 donated: 1% fee, the rest to the winner.
	if m := c.Record.Money; m.DonationsMinor != 30_000 || m.PotMinor != 230_000 || m.FeeMinor != 2_300 || m.Payouts[0].AmountMinor != 227_700 {
		t.Fatalf("the honest record's money: %+v, want donations 30000 in a pot of 230000, fee 2300, the winner paid 227700", m)
	}
	// A free game's pot is its donations, paid as a staked game's.
	_, free := s.wonGameDonated(t, 0, 10_000)
	if c, err := v.Game(ctx, free); err != nil || c.Record.StakeMinor != 0 || c.Record.Money.PotMinor != 10_000 || c.Record.Money.FeeMinor != 100 ||
		len(c.Record.Money.Payouts) != 1 || c.Record.Money.Payouts[0].AmountMinor != 9_900 {
		t.Fatalf("the honest free game with a donation: %+v %v, want a pot of 10000, a fee of 100 and 9900 paid", c, err)
	}

	for _, edit := range [][2]string{{`"potMinor":230000`, `"potMinor":200000`}, {`"donationsMinor":30000`, `"donationsMinor":0`},
		{`"feeMinor":2300`, `"feeMinor":2000`}, {`"amountMinor":227700,"kind":"pot"`, `"amountMinor":198000,"kind":"pot"`}} {
		s.tamper(t, `UPDATE games_log SET record = convert_to(replace(convert_from(record, 'UTF8'), ?, ?), 'UTF8') WHERE game_id = ?`,
			edit[0], edit[1], game)
	}
	// The tree rebuilt over the edit, and a checkpoint signed over it (the
	// next game's): a verifier that never saw the log before has only the
	// record to go by.
	s.rebuild(t)
	s.wonGame(t)
	_, err = (&verify.Verifier{URL: s.URL}).Game(ctx, game)
	wantRefused(t, err, "the record says donors gave 0, but its game:donation events give 30000")
}

// The verifier proves a user's share of the reserves from HTTP alone, and
// refuses what a platform hiding what it owes could publish, each
// snapshot signed with the log's real key: one that leaves the user out,
// one that counts them for one minor unit less than their balance, and
// one whose assets do not cover its liabilities. A snapshot that would
// hide a negative balance is refused when it is built.
func TestTheVerifierProvesMyShareOfTheReservesAndRefusesTampering(t *testing.T) {
	s := startServer(t, nil)
	ctx := t.Context()
	me, other := s.newClient(t), s.newClient(t)
	for _, c := range []*wager.Client{me, other} {
		fund(t, c, 1_000_000)
		if _, err := c.Deposit(ctx, 400_000); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Reserves.Take(ctx); err != nil {
		t.Fatal(err)
	}
	token, _ := me.Token()
	v := &verify.Verifier{URL: s.URL, Token: token}
	c, err := v.Reserves(ctx)
	if err != nil {
		t.Fatalf("the honest snapshot: %v", err)
	}
	if c.Proof.BalanceMinor != 400_000 || c.Snapshot.LiabilitiesMinor < 800_000 {
		t.Errorf("verified my balance %d of liabilities %d, want 400000 of at least 800000", c.Proof.BalanceMinor, c.Snapshot.LiabilitiesMinor)
	}
	myID := c.Proof.UserID

	// What the platform owes, as it would state it to hide a part.
	lying := func(owed func(user string, minor int64) int64, holdings func(assets []sumtree.Asset)) *reserves.Service {
		honest := []reserves.Owed{money.Owed, settlement.Owed, market.Owed, referrals.Owed}
		var liabilities int64
		return reserves.New(s.DB, reserves.Config{
			Owed: []reserves.Owed{func(ctx context.Context, idb bun.IDB, add func(string, int64)) error {
				liabilities = 0
				for _, read := range honest {
					if err := read(ctx, idb, func(user string, minor int64) {
						minor = owed(user, minor)
						liabilities += minor
						add(user, minor)
					}); err != nil {
						return err
					}
				}
				return nil
			}},
			Liabilities: func(context.Context, bun.IDB) (int64, error) { return liabilities, nil },
			Holdings: func(ctx context.Context) (uint64, []sumtree.Asset, error) {
				slot, assets, err := s.Money.Holdings(ctx)
				holdings(assets)
				return slot, assets, err
			},
			Sign: s.GamesLog.SignLine, Now: time.Now, Log: slog.Default()})
	}
	honestAssets := func([]sumtree.Asset) {}
	take := func(r *reserves.Service) {
		t.Helper()
		if _, err := r.Take(ctx); err != nil {
			t.Fatal(err)
		}
	}

	take(lying(func(user string, minor int64) int64 {
		if user == myID {
			return 0
		}
		return minor
	}, honestAssets))
	_, err = v.Reserves(ctx)
	wantRefused(t, err, "leaves you out, though your platform balance is 400000")

	take(lying(func(user string, minor int64) int64 {
		if user == myID {
			return minor - 1
		}
		return minor
	}, honestAssets))
	_, err = v.Reserves(ctx)
	wantRefused(t, err, "counts 399999 for you, less than your platform balance of 400000")

	take(lying(func(_ string, minor int64) int64 { return minor }, func(assets []sumtree.Asset) { assets[0].BalanceMinor = 0 }))
	_, err = v.Reserves(ctx)
	wantRefused(t, err, "are below the liabilities")

	_, err = lying(func(user string, minor int64) int64 {
		if user != myID {
			return -minor
		}
		return minor
	}, honestAssets).Take(ctx)
	wantRefused(t, err, "negative balance")
}

// With an RPC URL of the cluster, the verifier holds the log to its
// anchors on Solana, and refuses, saying what does not hold: an anchor
// listed with another root than the memo on chain, a history rewritten
// after an anchor (caught even by a verifier that never saw a checkpoint
// before: the chain remembers for it), and an anchor whose transaction the
// chain does not have.
func TestTheVerifierHoldsTheLogToItsAnchorsOnChain(t *testing.T) {
	s := startServer(t, nil)
	ctx := t.Context()
	_, first := s.wonGame(t)
	// The anchor worker or this turn anchors the tree with the game.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := s.Anchors.Once(ctx, time.Nanosecond); err != nil {
			t.Fatal(err)
		}
		if list, err := s.Anchors.Landed(ctx, 1); err != nil || len(list) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the log is not anchored 15 s after its first game")
		}
	}
	rpcURL := s.URL + "/dev/solana-rpc"
	c, err := (&verify.Verifier{URL: s.URL, RPC: rpcURL}).Game(ctx, first)
	if err != nil {
		t.Fatalf("the honest log: %v", err)
	}
	if c.Anchor == nil || *c.Anchor.Size <= c.Record.Index {
		t.Fatalf("verified anchor %+v, want one covering record %d", c.Anchor, c.Record.Index)
	}
	anchored := *c.Anchor
	_, second := s.wonGame(t)

	s.tamper(t, "UPDATE transparency_anchors SET root_hash = sha256(root_hash) WHERE signature = ?", anchored.Signature)
	_, err = (&verify.Verifier{URL: s.URL, RPC: rpcURL}).Game(ctx, second)
	wantRefused(t, err, "does not write the memo")
	s.tamper(t, "UPDATE transparency_anchors SET root_hash = ? WHERE signature = ?", anchored.RootHash, anchored.Signature)

	s.tamper(t, `UPDATE games_log SET record = convert_to(replace(convert_from(record, 'UTF8'),
		'"amountMinor":198000', '"amountMinor":198001'), 'UTF8') WHERE game_id = ?`, first)
	s.rebuild(t)
	_, third := s.wonGame(t) // the tree grows: the server's proofs check out against its new root
	_, err = (&verify.Verifier{URL: s.URL, RPC: rpcURL}).Game(ctx, third)
	wantRefused(t, err, "against the anchor on Solana")

	s.tamper(t, "DELETE FROM localchain.transactions WHERE signature = ?", anchored.Signature)
	_, err = (&verify.Verifier{URL: s.URL, RPC: rpcURL}).Game(ctx, third)
	wantRefused(t, err, "is not on the chain")
}

// With an RPC URL, the verifier holds a reserves snapshot to its anchor
// on Solana, and refuses an anchor listed with another root than the
// snapshot's, or whose transaction the chain does not have.
func TestTheVerifierHoldsTheReservesToTheirAnchorOnChain(t *testing.T) {
	s := startServer(t, nil)
	ctx := t.Context()
	me := s.newClient(t)
	fund(t, me, 1_000_000)
	if _, err := me.Deposit(ctx, 300_000); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserves.Take(ctx); err != nil {
		t.Fatal(err)
	}
	token, _ := me.Token()
	v := &verify.Verifier{URL: s.URL, Token: token, RPC: s.URL + "/dev/solana-rpc"}
	c, err := v.Reserves(ctx)
	if err != nil {
		t.Fatalf("the honest snapshot: %v", err)
	}
	if a, err := v.ReservesAnchored(ctx, c.Snapshot); err != nil || a != nil {
		t.Fatalf("before its anchor: %+v, %v; want no anchor and no error", a, err)
	}
	var a *anchor.Anchor
	for deadline := time.Now().Add(15 * time.Second); a == nil; time.Sleep(50 * time.Millisecond) {
		if err := s.Anchors.Once(ctx, time.Nanosecond); err != nil {
			t.Fatal(err)
		}
		if a, err = v.ReservesAnchored(ctx, c.Snapshot); err != nil {
			t.Fatalf("the honest anchor: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the snapshot is not anchored 15 s after it was taken")
		}
	}

	s.tamper(t, "UPDATE transparency_anchors SET root_hash = sha256(root_hash) WHERE signature = ?", a.Signature)
	_, err = v.ReservesAnchored(ctx, c.Snapshot)
	wantRefused(t, err, "has another root than the snapshot")
	s.tamper(t, "UPDATE transparency_anchors SET root_hash = ? WHERE signature = ?", a.RootHash, a.Signature)

	s.tamper(t, "DELETE FROM localchain.transactions WHERE signature = ?", a.Signature)
	_, err = v.ReservesAnchored(ctx, c.Snapshot)
	wantRefused(t, err, "is not on the chain")
}
