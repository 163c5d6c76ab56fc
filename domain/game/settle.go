package game

import "wager/domain"

// ErrFreeGame refuses bets and market orders on a free game (stake 0).
var ErrFreeGame = domain.Errorf(domain.CodeBettingClosed,
	"a free game takes no bets and has no market: nobody loses anything by throwing it, so nobody may win on it either")

// FeeBps is the platform fee on the whole pot, in basis points (1%).
const FeeBps = 100

// Payout splits a pot: fee = floor(total / 100) and the winner gets the
// rest.
func Payout(total int64) (fee, payout int64) {
	fee = total * FeeBps / 10_000
	return fee, total - fee
}
