// Package gamerecord is the format of a record of the public log of
// games: what the platform appends and what a verifier reads (package
// verify). A record's exact bytes are what the log's tree
// hashes: it is encoded once, when it is appended, and never again.
package gamerecord

import (
	"encoding/json"
	"time"
)

// Record is one game in the log: who played what for how much, every
// event of its public log up to its end (the commitments and reveals
// included), how it ended and every payout to the minor unit. From a
// record alone a verifier replaying the game's rules gets the same
// outcome and the same pot payout.
type Record struct {
	Version      int             `json:"version"`
	Index        int64           `json:"index"`
	GameID       string          `json:"gameId"`
	GameType     string          `json:"gameType"`
	Settings     json.RawMessage `json:"settings"`
	TournamentID *string         `json:"tournamentId"`
	Players      []Player        `json:"players"`
	StakeMinor   int64           `json:"stakeMinor"`
	StartedAt    time.Time       `json:"startedAt"`
	EndedAt      time.Time       `json:"endedAt"`
	Events       []Event         `json:"events"`
	Outcome      Outcome         `json:"outcome"`
	Money        Money           `json:"money"`
}

// Player is a seat of a logged game, in seat order.
type Player struct {
	UserID        string `json:"userId" bun:"user_id"`
	WalletAddress string `json:"walletAddress" bun:"wallet_address"`
}

// Event is an event of a logged game, as GET /games/:id/events gives it.
type Event struct {
	GameID    string          `json:"gameId"`
	Seq       int             `json:"seq"`
	Name      string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Outcome is how a logged game ended.
type Outcome struct {
	Status       string  `json:"status" enum:"completed,cancelled"`
	WinnerUserID *string `json:"winnerUserId"`
	Reason       string  `json:"reason"`
}

// Money is what a logged game paid.
type Money struct {
	PotMinor       int64    `json:"potMinor"`
	DonationsMinor int64    `json:"donationsMinor"`
	FeeMinor       int64    `json:"feeMinor"`
	Payouts        []Payout `json:"payouts"`
	Integrity      string   `json:"integrity" enum:"none,released,voided"`
}

// Payout is one payment of a logged game's end.
type Payout struct {
	UserID      string `json:"userId" bun:"user_id"`
	AmountMinor int64  `json:"amountMinor" bun:"amount_minor"`
	Kind        string `json:"kind" bun:"kind" enum:"pot,refund,bet,market"`
}

// Kinds of payout.
const (
	PayoutPot    = "pot"    // the winner's payout of the players' pot and donations
	PayoutRefund = "refund" // a stake given back after a draw or cancellation, or a bet refunded
	PayoutBet    = "bet"    // a winning bet's payout
	PayoutMarket = "market" // what a holder's shares pay once the market is resolved
)
