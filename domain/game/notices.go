package game

import (
	"context"
	"time"

	"wager/db"
	"wager/domain/notify"
)

// ChallengeNotice is the data of a challenge notification.
type ChallengeNotice struct {
	ChallengeID  string    `json:"challengeId"`
	FromUserID   string    `json:"fromUserId"`
	FromUsername string    `json:"fromUsername"`
	GameType     string    `json:"gameType"`
	StakeMinor   int64     `json:"stakeMinor"`
	ExpiresAt    time.Time `json:"expiresAt"`
}

// CompletedNotice is the data of a game_completed notification, one per
// player.
type CompletedNotice struct {
	GameID   string  `json:"gameId"`
	GameType string  `json:"gameType"`
	Status   string  `json:"status" doc:"completed or cancelled"`
	WinnerID *string `json:"winnerId" doc:"null for a draw or cancellation"`
	Reason   string  `json:"reason"`
	// Outcome is the game for the player told: won, lost, draw or
	// cancelled.
	Outcome string `json:"outcome"`
	// ReceivedMinor is what the game paid this player: the winner's
	// payout, the stake back after a draw or cancellation, 0 for the loser.
	ReceivedMinor int64 `json:"receivedMinor"`
	PayoutMinor   int64 `json:"payoutMinor" doc:"what the winner received"`
	FeeMinor      int64 `json:"feeMinor"`
}

// notifyCompleted tells each player of a finished game how it ended and
// what it paid them, in the transaction that finished it, with its
// queued writes (told reserved their ids, in the players' order).
func (s *Service) notifyCompleted(ctx context.Context, tx db.Tx, told *notify.Reserved, g Game, r Result) error {
	msgs := make([]notify.Message, 0, len(g.Players))
	for _, p := range g.Players {
		n := CompletedNotice{GameID: g.ID, GameType: g.GameType, Status: g.Status, WinnerID: r.WinnerID,
			Reason: r.Reason, PayoutMinor: r.PayoutMinor, FeeMinor: r.FeeMinor}
		switch {
		case g.Status == StatusCancelled:
			n.Outcome, n.ReceivedMinor = "cancelled", g.StakeMinor
		case r.WinnerID == nil:
			n.Outcome, n.ReceivedMinor = "draw", g.StakeMinor
		case *r.WinnerID == p:
			n.Outcome, n.ReceivedMinor = "won", r.PayoutMinor
		default:
			n.Outcome = "lost"
		}
		msgs = append(msgs, notify.Message{UserID: p, Type: notify.GameCompleted, Data: n})
	}
	return told.Send(ctx, tx, msgs)
}
