// Command verify checks a server's public log of games without trusting
// the server: verify game <id> proves that the game's record is in the
// log under a checkpoint signed by the log's key, that the log only grew
// since the last checkpoint this command saw, that the record's own
// events give the outcome and pot payout it states and, with -rpc, that
// the log extends its newest anchor on Solana; verify log checks the
// latest checkpoint alone; verify reserves (signed in: -token) proves that
// your balance is counted in the latest proof of reserves and, with -rpc,
// that the snapshot is anchored on Solana. What it saw
// last it keeps in a file (-state).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"wager.example.com/sdk/anchor"
	"wager.example.com/sdk/verify"
)

func main() {
	server := flag.String("url", "http://localhost:8080", "the server")
	state := flag.String("state", "", "the file that keeps the log's key and the last checkpoint seen (default: one per server in the user's config folder)")
	key := flag.String("key", "", "the log's verifier key, from someone you trust (default: the one kept, else the one the server publishes)")
	rpcURL := flag.String("rpc", "", "a Solana RPC URL of the platform's cluster, to check the anchors of the log and of the reserves on chain (default: not checked)")
	token := flag.String("token", os.Getenv("WAGER_TOKEN"), "your bearer token, for verify reserves (default: $WAGER_TOKEN)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: verify [-url URL] [-state FILE] [-key KEY] [-rpc URL] [-token TOKEN] game <id> | log | reserves")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *state == "" {
		*state = defaultState(*server)
	}
	v := &verify.Verifier{URL: *server, StateFile: *state, Key: *key, RPC: *rpcURL, Token: *token}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	switch args := flag.Args(); {
	case len(args) == 2 && args[0] == "game":
		err = game(ctx, v, args[1])
	case len(args) == 1 && args[0] == "log":
		err = logOnly(ctx, v)
	case len(args) == 1 && args[0] == "reserves":
		err = reserves(ctx, v)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "NOT VERIFIED:", err)
		os.Exit(1)
	}
}

func game(ctx context.Context, v *verify.Verifier, id string) error {
	c, err := v.Game(ctx, id)
	if err != nil {
		return err
	}
	r := c.Record
	fmt.Printf("game %s is record %d of %s, whose checkpoint of %d records is signed by the log's key\n",
		r.GameID, r.Index, c.Checkpoint.Origin, c.Checkpoint.Tree.N)
	consistency(c.Previous, c.Checkpoint)
	if v.RPC != "" {
		anchored(c.Anchor, r.Index)
	}
	winner := "nobody"
	if r.Outcome.WinnerUserID != nil {
		winner = *r.Outcome.WinnerUserID
	}
	fmt.Printf("replayed from its %d events: %s, won by %s (%s); pot %d with donations %d, fee %d, as the record and its events say\n",
		len(r.Events), r.Outcome.Status, winner, r.Outcome.Reason, r.Money.PotMinor, r.Money.DonationsMinor, r.Money.FeeMinor)
	for _, p := range r.Money.Payouts {
		fmt.Printf("  paid %d to %s (%s)\n", p.AmountMinor, p.UserID, p.Kind)
	}
	return nil
}

func reserves(ctx context.Context, v *verify.Verifier) error {
	c, err := v.Reserves(ctx)
	if err != nil {
		return err
	}
	s := c.Snapshot
	fmt.Printf("reserves snapshot %s (%s, slot %d) is signed by the log's key\n", s.SnapshotID, s.At.Format(time.RFC3339), s.Slot)
	fmt.Printf("your balance of %d is counted in its liabilities of %d (a path of %d steps to the root, no negative sum, no overflow)\n",
		c.Proof.BalanceMinor, s.LiabilitiesMinor, len(c.Proof.Path))
	fmt.Printf("its assets, %d in %d token accounts, cover the liabilities of %d owed to %d users\n",
		s.AssetsMinor, len(s.Assets), s.LiabilitiesMinor, s.Users)
	if v.RPC == "" {
		return nil
	}
	a, err := v.ReservesAnchored(ctx, s)
	switch {
	case err != nil:
		return err
	case a == nil:
		fmt.Println("no anchor on Solana of this snapshot yet")
	default:
		fmt.Printf("the snapshot's root is anchored on Solana (slot %d, transaction %s): it was published then\n", a.Slot, a.Signature)
	}
	return nil
}

func logOnly(ctx context.Context, v *verify.Verifier) error {
	cp, prev, err := v.Log(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("%s: a checkpoint of %d records, signed by the log's key\n", cp.Origin, cp.Tree.N)
	consistency(prev, cp)
	if v.RPC == "" {
		return nil
	}
	a, err := v.Anchored(ctx, cp)
	if err != nil {
		return err
	}
	anchored(a, -1)
	return nil
}

// anchored says what the newest anchor on chain proved: the log extends
// it, and whether it covers the record at index (-1: no record).
func anchored(a *anchor.Anchor, index int64) {
	switch {
	case a == nil:
		fmt.Println("no anchor on Solana covers this checkpoint yet")
	case index >= *a.Size:
		fmt.Printf("the log extends its anchor on Solana of %d records (slot %d, transaction %s); this record came after it\n",
			*a.Size, a.Slot, a.Signature)
	default:
		fmt.Printf("the log extends its anchor on Solana of %d records (slot %d, transaction %s), which covers it: it existed then\n",
			*a.Size, a.Slot, a.Signature)
	}
}

func consistency(prev *verify.Checkpoint, cp verify.Checkpoint) {
	if prev == nil {
		fmt.Println("first checkpoint seen of this log: kept, to prove the next ones extend it")
		return
	}
	fmt.Printf("consistent with the checkpoint of %d records seen before: the log only grew\n", prev.Tree.N)
}

// defaultState is a file per server in the user's config folder.
func defaultState(server string) string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "wager-verify.json"
	}
	host := server
	if u, err := url.Parse(server); err == nil && u.Host != "" {
		host = u.Host
	}
	return filepath.Join(dir, "wager-verify", strings.NewReplacer(":", "_", "/", "_").Replace(host)+".json")
}
