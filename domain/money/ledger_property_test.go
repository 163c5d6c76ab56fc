package money_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/domain"
	"wager/domain/money"
)

// The property: whatever sequence of balanced postings is tried between
// whatever accounts, the ledger sums to zero after each one, every account
// holds exactly what the accepted postings moved into it, an account that
// may not go negative never does (the posting that would take it there is
// refused whole, with INSUFFICIENT_FUNDS), and a reference posted before
// moves nothing.
func TestLedgerStaysBalancedUnderRandomPostings(t *testing.T) {
	const postings = 200
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("seed %d", seed)

	type account struct {
		id          string
		mayGoBelow0 bool
	}
	var accounts []account
	for range 3 {
		u := newUser(t)
		accounts = append(accounts, account{money.Available(u.ID), false}, account{money.Locked(u.ID), false})
	}
	gameID := uuid.NewString()
	accounts = append(accounts, account{money.SpectatorPot(gameID), false}, account{money.Escrow(gameID), true},
		account{money.Vault, true}, account{money.Treasury, false})

	// The model starts from the accounts' balances now: vault and treasury
	// carry what the other tests of the package moved.
	want := map[string]int64{}
	for _, a := range accounts {
		want[a.id] = balance(t, a.id)
	}
	var used []string // references accepted so far
	accepted, refused, repeated := 0, 0, 0
	for i := range postings {
		// Two to four entries on distinct accounts; the last balances the rest.
		n := 2 + rng.IntN(3)
		perm := rng.Perm(len(accounts))[:n]
		entries := make([]money.Entry, n)
		var sum int64
		for j, k := range perm[:n-1] {
			amount := rng.Int64N(2_000) - 1_000
			if amount == 0 {
				amount = 1
			}
			entries[j] = money.Entry{Account: accounts[k].id, Amount: amount}
			sum += amount
		}
		if sum == 0 {
			entries[0].Amount++
			sum++
		}
		entries[n-1] = money.Entry{Account: accounts[perm[n-1]].id, Amount: -sum}

		ref := "prop:" + strconv.FormatUint(seed, 10) + ":" + strconv.Itoa(i)
		repeat := len(used) > 0 && rng.IntN(10) == 0
		if repeat {
			ref = used[rng.IntN(len(used))]
		}
		posted, err := post(t, money.Posting{Kind: "test", Reference: ref, Entries: entries})

		// What the rules say should happen: entries apply in order, and the
		// first that takes a protected account below zero refuses the lot.
		next := map[string]int64{}
		for k, v := range want {
			next[k] = v
		}
		overdraft := false
		for _, e := range entries {
			next[e.Account] += e.Amount
			for _, a := range accounts {
				if a.id == e.Account && !a.mayGoBelow0 && next[e.Account] < 0 {
					overdraft = true
				}
			}
			if overdraft {
				break
			}
		}
		switch {
		case repeat:
			repeated++
			if err != nil || posted {
				t.Fatalf("seed %d, posting %d: a used reference: got posted=%v err=%v, want false, nil", seed, i, posted, err)
			}
		case overdraft:
			refused++
			if code := domain.ErrorCode(err); code != domain.CodeInsufficientFunds || posted {
				t.Fatalf("seed %d, posting %d %v: got posted=%v err=%v, want %s", seed, i, entries, posted, err, domain.CodeInsufficientFunds)
			}
		default:
			accepted++
			if err != nil || !posted {
				t.Fatalf("seed %d, posting %d %v: got posted=%v err=%v, want it posted", seed, i, entries, posted, err)
			}
			want = next
			used = append(used, ref)
		}

		for _, a := range accounts {
			got := balance(t, a.id)
			if got != want[a.id] {
				t.Fatalf("seed %d, after posting %d: %s holds %d, want %d", seed, i, a.id, got, want[a.id])
			}
			if !a.mayGoBelow0 && got < 0 {
				t.Fatalf("seed %d, after posting %d: %s went negative (%d)", seed, i, a.id, got)
			}
		}
		wantTotalsZero(t)
		if t.Failed() {
			t.Fatalf("seed %d: the ledger stopped summing to zero after posting %d", seed, i)
		}
	}
	t.Logf("%d postings accepted, %d refused as overdrafts, %d repeated references", accepted, refused, repeated)
	if accepted == 0 || refused == 0 {
		t.Errorf("the random postings exercised too little: %d accepted, %d refused", accepted, refused)
	}
}
