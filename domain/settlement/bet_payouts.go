package settlement

import "math/bits"

// MinBet is the smallest bet in USDC minor units (0.01 USDC).
const MinBet = 10_000

// BetFeeBps is the platform's share of a pool that has winners.
const BetFeeBps = 100

// BetPayouts is the pari-mutuel arithmetic of a settled pool: amounts are
// the bets, onWinner says which were on the winner. With T the total and W
// the total on the winner, fee = floor(T / 100) and each winning bet b gets
// floor((T - fee) * b / W); remainder is what those floors leave over (it
// goes to the treasury with the fee). When no bet is on the winner (W = 0,
// which includes a draw or a cancellation), every bet is paid back in
// full, with no fee. Payouts, fee and remainder always add up to T.
func BetPayouts(amounts []int64, onWinner []bool) (payouts []int64, fee, remainder int64) {
	var total, won int64
	for i, a := range amounts {
		total += a
		if onWinner[i] {
			won += a
		}
	}
	payouts = make([]int64, len(amounts))
	if won == 0 {
		copy(payouts, amounts)
		return payouts, 0, 0
	}
	fee = total * BetFeeBps / 10_000
	net := total - fee
	paid := int64(0)
	for i, a := range amounts {
		if !onWinner[i] {
			continue
		}
		hi, lo := bits.Mul64(uint64(net), uint64(a))
		q, _ := bits.Div64(hi, lo, uint64(won)) // q <= net: no overflow
		payouts[i] = int64(q)
		paid += payouts[i]
	}
	return payouts, fee, net - paid
}
