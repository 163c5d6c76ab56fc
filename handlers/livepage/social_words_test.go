package livepage

import (
	"encoding/json"
	"testing"

	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/integrity"
	"wager/domain/market"
	"wager/domain/notify"
	"wager/domain/settlement"
	"wager/domain/social"
	"wager/domain/support"
	"wager/domain/tips"
)

// Every notification and feed entry is one sentence a person reads, with
// the right names and amounts in the right places.
func TestNotificationsAndFeedEntriesReadRight(t *testing.T) {
	data := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	winner := "id-ann"
	for _, c := range []struct {
		typ        string
		data       any
		text, href string
	}{
		{notify.FriendRequest, social.FriendNotice{UserID: "id-bob", Username: "bob"}, "bob asked to be your friend.", "/friends"},
		{notify.FriendAccepted, social.FriendNotice{UserID: "id-bob", Username: "bob"}, "bob accepted your friend request.", "/u/bob"},
		{notify.Challenge, game.ChallengeNotice{FromUsername: "cat", GameType: "connect4", StakeMinor: 2_500_000},
			"cat challenged you to Connect Four for 2.50 USDC.", "/play"},
		{notify.Challenge, game.ChallengeNotice{FromUsername: "cat", GameType: "rps"},
			"cat challenged you to rock, paper, scissors, a free game.", "/play"},
		{notify.GameCompleted, game.CompletedNotice{GameID: "g1", GameType: "rps", Outcome: "won", WinnerID: &winner,
			ReceivedMinor: 1_980_000, PayoutMinor: 1_980_000, FeeMinor: 20_000},
			"You won the rock, paper, scissors game and received 1.98 USDC.", "/game/g1"},
		{notify.GameCompleted, game.CompletedNotice{GameID: "g1", GameType: "rps", Outcome: "won", WinnerID: &winner},
			"You won the rock, paper, scissors game.", "/game/g1"},
		{notify.GameCompleted, game.CompletedNotice{GameID: "g1", GameType: "connect4", Outcome: "lost", WinnerID: &winner},
			"You lost the Connect Four game.", "/game/g1"},
		{notify.GameCompleted, game.CompletedNotice{GameID: "g1", GameType: "rps", Outcome: "draw", ReceivedMinor: 1_000_000},
			"The rock, paper, scissors game was a draw: your 1.00 USDC stake came back.", "/game/g1"},
		{notify.GameCompleted, game.CompletedNotice{GameID: "g1", GameType: "rps", Outcome: "cancelled"},
			"The rock, paper, scissors game was cancelled.", "/game/g1"},
		{notify.Achievement, social.AchievementNotice{AchievementID: "first-win", Name: "First win"},
			"Achievement unlocked: First win.", "/me"},
		{notify.SupportReply, support.ReplyNotice{TicketID: "t1", Subject: "Missing payout"},
			"Support answered your ticket: Missing payout.", "/support/tickets/t1"},
		{notify.Tip, tips.Notice{From: chat.UserRef{UserID: "id-bob", Username: "bob"}, AmountMinor: 500_000},
			"bob tipped you 0.50 USDC.", "/u/bob"},
		{notify.Tip, tips.Notice{From: chat.UserRef{UserID: "id-bob", Username: "bob"}, AmountMinor: 1_000_000,
			Context: &tips.Context{Type: "game", ID: "g3"}}, "bob tipped you 1.00 USDC.", "/game/g3"},
		{notify.BetSettled, settlement.BetSettledNotice{GameID: "g4", AmountMinor: 1_000_000, Status: "won", PayoutMinor: 1_980_000},
			"Your bet of 1.00 USDC won: 1.98 USDC paid to your balance.", "/game/g4"},
		{notify.BetSettled, settlement.BetSettledNotice{GameID: "g4", AmountMinor: 500_000, Status: "lost"},
			"Your bet of 0.50 USDC lost: the player you backed did not win.", "/game/g4"},
		{notify.BetSettled, settlement.BetSettledNotice{GameID: "g4", AmountMinor: 500_000, Status: "refunded", PayoutMinor: 500_000},
			"Your bet of 0.50 USDC was refunded to your balance.", "/game/g4"},
		{notify.MarketResolved, market.ResolvedNotice{GameID: "g5", WinnerID: "id-ann", RedeemableMinor: 3_000_000},
			"A game you traded ended: your shares redeem for 3.00 USDC.", "/game/g5"},
		{notify.MarketResolved, market.ResolvedNotice{GameID: "g5", RedeemableMinor: 1_500_000},
			"A game you traded ended without a winner: your shares redeem for 1.50 USDC.", "/game/g5"},
		{notify.ReviewHold, integrity.ReviewHeld{GameID: "g6", Reason: "resign"},
			"A game you bet on or traded ended by resignation and is held for review: an admin will pay your bets and shares as the game ended, or refund them.",
			"/game/g6"},
		{notify.ReferralReward, struct {
			AmountMinor int64 `json:"amountMinor"`
		}{20_000}, "You earned 0.02 USDC from a game of someone you referred.", "/referrals"},
		{"something_later", struct{}{}, "You have a new notification.", "/notifications"},
	} {
		l := NotificationLine(notify.Notification{Type: c.typ, Data: data(c.data)})
		if l.Text != c.text || l.Href != c.href {
			t.Errorf("%s: %q -> %s, want %q -> %s", c.typ, l.Text, l.Href, c.text, c.href)
		}
	}

	ann := social.UserRef{UserID: "id-ann", Username: "ann"}
	for _, c := range []struct {
		typ        string
		data       any
		text, href string
	}{
		{social.ActivityGameWon, social.GameWon{GameID: "g1", GameType: "rps", Loser: social.UserRef{Username: "bob"}, PayoutMinor: 2_970_000},
			"ann beat bob at rock, paper, scissors and won 2.97 USDC.", "/game/g1"},
		{social.ActivityGameWon, social.GameWon{GameID: "g1", GameType: "connect4", Loser: social.UserRef{Username: "bob"}},
			"ann beat bob at Connect Four.", "/game/g1"},
		{social.ActivityDonation, social.Donated{GameID: "g2", AmountMinor: 10_000}, "ann donated 0.01 USDC to a game's pot.", "/game/g2"},
		{social.ActivityTip, social.Tipped{To: social.UserRef{UserID: "id-bob", Username: "bob"}, AmountMinor: 50_000},
			"ann tipped bob 0.05 USDC.", "/u/ann"},
		{social.ActivityAchievement, social.AchievementNotice{Name: "Hat trick"}, "ann unlocked Hat trick.", "/u/ann"},
	} {
		l := FeedLine(social.Entry{Type: c.typ, Actor: ann, Data: data(c.data)})
		if l.Text != c.text || l.Href != c.href {
			t.Errorf("%s: %q -> %s, want %q -> %s", c.typ, l.Text, l.Href, c.text, c.href)
		}
	}
}
