package gamelog_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"wager.example.com/sdk/gamerecord"
	"wager.example.com/sdk/sumtree"
	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/gamelog"
	"wager/domain/settlement"
)

var update = flag.Bool("update", false, "write the golden vectors of testdata/golden anew")

// golden is where the vectors live, beside the verifier that checks them:
// see its README.md.
const golden = "../../sdk/verify/testdata/golden"

// The golden vectors of what the platform publishes, for anyone writing a
// verifier of their own (README.md there): three records of the log, the
// signed checkpoint of their tree and its key, an inclusion and a
// consistency proof, a signed snapshot of the reserves and one user's
// proof. The platform's code makes them again byte for byte; the SDK's
// verifier accepts them (its own test).
func TestGoldenVectors(t *testing.T) {
	files := map[string][]byte{}
	log, err := gamelog.New(nil, nil, gamelog.Config{Origin: "arena.example/games-log", Seed: []byte("golden vectors")})
	if err != nil {
		t.Fatal(err)
	}
	files["key.txt"] = []byte(log.VerifierKey() + "\n")

	stored := map[int64]tlog.Hash{}
	hashes := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = stored[id]
		}
		return out, nil
	})
	for i := range int64(3) {
		donated := int64(0)
		if i == 2 {
			donated = 500_000 // the last game had a spectator's donation
		}
		b, err := json.Marshal(playedAs(t, fmt.Sprintf("game-%d", i), i, donated))
		if err != nil {
			t.Fatal(err)
		}
		hs, err := tlog.StoredHashes(i, b, hashes)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			stored[tlog.StoredHashIndex(0, i)+int64(j)] = h
		}
		files[fmt.Sprintf("record-%d.json", i)] = b
	}
	tree3 := goldenTree(t, 3, hashes)
	if files["checkpoint-3.txt"], err = log.Checkpoint(tree3); err != nil {
		t.Fatal(err)
	}
	inclusion, err := tlog.ProveRecord(3, 1, hashes)
	if err != nil {
		t.Fatal(err)
	}
	files["inclusion-1-in-3.txt"] = hashLines(inclusion)
	consistency, err := tlog.ProveTree(3, 2, hashes)
	if err != nil {
		t.Fatal(err)
	}
	files["consistency-2-to-3.txt"] = hashLines(consistency)

	snap, proof := goldenReserves(t, log)
	files["reserves-snapshot.json"] = indented(t, snap)
	files["reserves-proof.json"] = indented(t, proof)

	for name, b := range files {
		path := filepath.Join(golden, name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s is not what the platform makes (%v): run go test ./domain/gamelog -run TestGoldenVectors -update and review the change", path, err)
		}
	}
}

func goldenTree(t *testing.T, n int64, hashes tlog.HashReader) tlog.Tree {
	t.Helper()
	h, err := tlog.TreeHash(n, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return tlog.Tree{N: n, Hash: h}
}

// goldenReserves is a snapshot of three users' balances, with fixed salts,
// signed with the log's key, and the second user's proof.
func goldenReserves(t *testing.T, log *gamelog.Log) (sumtree.Snapshot, sumtree.Proof) {
	t.Helper()
	users := []string{"0b7e6a2c-1d4f-4c3b-9a55-3f1e2d4c5b6a", "5c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f", "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"}
	var leaves []sumtree.Leaf
	for i, u := range users {
		leaves = append(leaves, sumtree.Leaf{UserID: u, Salt: bytes.Repeat([]byte{byte(i + 1)}, 16), Balance: int64(i+1) * 1_500_000})
	}
	tree, err := sumtree.Build(leaves)
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root()
	snap := sumtree.Snapshot{SnapshotID: "1", At: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Slot: 42, RootHash: root.Hash[:],
		LiabilitiesMinor: root.Sum, Users: len(users), Assets: []sumtree.Asset{{Address: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
			BalanceMinor: 9_100_000}}, AssetsMinor: 9_100_000}
	if snap.Signature, err = log.SignLine(snap.Statement()); err != nil {
		t.Fatal(err)
	}
	path, _ := tree.Path(users[1])
	return snap, sumtree.ProofOf(snap.SnapshotID, leaves[1], path)
}

func hashLines(hashes []tlog.Hash) []byte {
	var b strings.Builder
	for _, h := range hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	return []byte(b.String())
}

func indented(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// playedAs is a record of an rps game of three rounds, staked 1 USDC by
// each player, that "a" wins 2-0 (rock over scissors twice), made with the
// game's own rules as the platform makes its events, as game id at index
// of the log, ended by game:completed as the platform's game.Completed
// encodes it. A spectator donated donated minor units in the first round
// (none when 0): the pot and the winner's payout include it.
func playedAs(t *testing.T, id string, index, donated int64) gamerecord.Record {
	t.Helper()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	settings, err := rules.RPS{}.ParseSettings(json.RawMessage(`{"rounds": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	state, events, err := rules.RPS{}.Start(id, []string{"a", "b"}, settings, start)
	if err != nil {
		t.Fatal(err)
	}
	const stakes, vault = 2_000_000, "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	pot := stakes + donated
	fee, payout := game.Payout(pot)
	if donated > 0 {
		events = append(events, rules.Event{Name: domain.EventDonation, Data: settlement.Donated{Donor: chat.UserRef{UserID: "c", Username: "carol"},
			AmountMinor: donated, Signature: "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"}},
			rules.Event{Name: domain.EventPot, Data: settlement.Pot{PlayerPotMinor: stakes, SpectatorPotMinor: donated, TotalMinor: pot,
				FeeBps: game.FeeBps, FeeMinor: fee, WinnerGetsMinor: payout}})
	}
	for round := range 2 {
		for _, m := range []struct{ player, choice string }{{"a", "rock"}, {"b", "scissors"}} {
			salt := bytes.Repeat([]byte{byte(round*2 + len(m.player))}, 16)
			evs, err := state.Move(m.player, json.RawMessage(`"`+m.choice+`"`), start.Add(time.Second), bytes.NewReader(salt))
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, evs...)
		}
	}
	winner := "a"
	end := game.Completed{GameID: id, Status: "completed", Result: game.Result{WinnerID: &winner, Reason: "score",
		Settlement: game.Settlement{PotMinor: pot, PlayerPotMinor: stakes, SpectatorPotMinor: donated, FeeMinor: fee, PayoutMinor: payout,
			EscrowAddress: "3Kz9HtnqbMBvTGQbQu5WDTSu6nY4qXkbpQJEpxH3RDjs"}},
		Ratings:   []game.RatingChange{{UserID: "a", Before: 1500, After: 1662.3, Provisional: true}, {UserID: "b", Before: 1500, After: 1337.7, Provisional: true}},
		Transfers: []game.SettlementTransfer{}}
	if donated > 0 {
		end.Transfers = append(end.Transfers, game.SettlementTransfer{ID: "7d2f4a10-5b3c-4e8d-9f61-2a0b1c3d4e5f", Kind: "sweep", ToAddress: vault, AmountMinor: donated})
	}
	events = append(events, rules.Event{Name: domain.EventGameCompleted, Data: end})
	r := gamerecord.Record{Version: 1, Index: index, GameID: id, GameType: "rps", Settings: settings, StakeMinor: stakes / 2, StartedAt: start,
		EndedAt: start.Add(time.Second), Players: []gamerecord.Player{{UserID: "a", WalletAddress: "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV"},
			{UserID: "b", WalletAddress: "2fmz8SuNVyxEP6QwKQs6LNaT2ATszySPEJdhUDesxktc"}},
		Outcome: gamerecord.Outcome{Status: "completed", WinnerUserID: &winner, Reason: "score"},
		Money: gamerecord.Money{PotMinor: pot, DonationsMinor: donated, FeeMinor: fee, Payouts: []gamerecord.Payout{{UserID: "a", AmountMinor: payout, Kind: "pot"}},
			Integrity: "none"}}
	for i, e := range events {
		data, _ := json.Marshal(e.Data)
		r.Events = append(r.Events, gamerecord.Event{GameID: id, Seq: i + 1, Name: string(e.Name), Data: data, CreatedAt: start})
	}
	return r
}
