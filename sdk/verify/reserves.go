package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"wager.example.com/sdk/sumtree"
)

// errNoShare is the server saying the user had no leaf in the latest
// snapshot.
var errNoShare = errors.New("you have no share in the latest proof of reserves: the platform says it owed you nothing then")

// ReservesCheck is what Reserves verified.
type ReservesCheck struct {
	Snapshot sumtree.Snapshot
	Proof    sumtree.Proof
}

// Reserves verifies the signed-in user's (Token's) share of the latest
// proof of reserves: the snapshot is signed by the log's key; the user's
// leaf, hashed from their own salt and balance, climbs their path to the
// snapshot's root with no negative sum and no overflow on the way, so
// their balance is counted in the liabilities, and it is no less than the
// platform balance the user is shown (what else they are owed, in games'
// pools or markets, only adds to it); and the assets it lists add up and
// cover the liabilities.
func (v *Verifier) Reserves(ctx context.Context) (ReservesCheck, error) {
	if v.Token == "" {
		return ReservesCheck{}, errors.New("checking your share of the reserves needs you signed in (a token)")
	}
	var c ReservesCheck
	body, err := v.get(ctx, "/reserves")
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(body, &c.Snapshot); err != nil {
		return c, fmt.Errorf("the server's answer is not a reserves snapshot: %w", err)
	}
	v.mu.Lock()
	st, err := v.load()
	v.mu.Unlock()
	if err != nil {
		return c, err
	}
	key, err := v.key(ctx, st)
	if err != nil {
		return c, err
	}
	if err := c.Snapshot.CheckSignature(key); err != nil {
		return c, err
	}
	if body, err = v.get(ctx, "/wallets/me/balance"); err != nil {
		return c, err
	}
	var shown struct {
		Available int64 `json:"availableMinor"`
		Locked    int64 `json:"lockedMinor"`
	}
	if err := json.Unmarshal(body, &shown); err != nil {
		return c, fmt.Errorf("the server's answer is not your balance: %w", err)
	}
	body, err = v.get(ctx, "/users/me/reserves-proof")
	switch {
	case errors.Is(err, errNoShare) && shown.Available+shown.Locked > 0:
		return c, fmt.Errorf("reserves snapshot %s leaves you out, though your platform balance is %d: it hides what is owed to you",
			c.Snapshot.SnapshotID, shown.Available+shown.Locked)
	case err != nil:
		return c, err
	}
	if err := json.Unmarshal(body, &c.Proof); err != nil {
		return c, fmt.Errorf("the server's answer is not your share of the reserves: %w", err)
	}
	if err := c.Proof.Check(c.Snapshot); err != nil {
		return c, fmt.Errorf("your balance of %d is not counted in reserves snapshot %s: %w", c.Proof.BalanceMinor, c.Snapshot.SnapshotID, err)
	}
	if c.Proof.BalanceMinor < shown.Available+shown.Locked {
		return c, fmt.Errorf("reserves snapshot %s counts %d for you, less than your platform balance of %d: it leaves out part of what is owed to you",
			c.Snapshot.SnapshotID, c.Proof.BalanceMinor, shown.Available+shown.Locked)
	}
	if err := c.Snapshot.CheckAssets(); err != nil {
		return c, fmt.Errorf("reserves snapshot %s: %w", c.Snapshot.SnapshotID, err)
	}
	return c, nil
}
