package game

// FeeBps is the platform fee on the whole pot, in basis points (1%).
const FeeBps = 100

// Payout splits a pot: fee = floor(total / 100) and the winner gets the
// rest.
func Payout(total int64) (fee, payout int64) {
	fee = total * FeeBps / 10_000
	return fee, total - fee
}
