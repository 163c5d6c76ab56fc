// Package rating implements the Glicko-2 rating system as described in
// Mark Glickman's "Example of the Glicko-2 system"
// (http://www.glicko.net/glicko/glicko2.pdf).
//
// Ratings are stored and exchanged on the familiar Glicko scale (a new
// player is 1500 ± 350); the update itself runs on the internal Glicko-2
// scale, which is the Glicko scale divided by 173.7178 and centred on 0.
//
// The package is pure: no I/O, no clocks, no global mutable state. Callers
// decide what a rating period is; Game treats every game as its own period,
// as Lichess does, so ratings move immediately after each game.
package rating

import "math"

// Defaults for a player who has never played, on the Glicko scale (the
// values the paper recommends for an unrated player).
const (
	DefaultRating     = 1500.0
	DefaultDeviation  = 350.0
	DefaultVolatility = 0.06
)

// MaxDeviation caps the rating deviation. A long absence (or a fresh
// account) must never make a rating less certain than a brand-new one,
// otherwise a single game could swing it absurdly; Lichess clamps at its
// starting deviation for the same reason.
const MaxDeviation = DefaultDeviation

// ProvisionalDeviation is the deviation above which a rating is still
// provisional (shown as "1500?"), as API.md says: strictly above 110.
const ProvisionalDeviation = 110.0

// DefaultTau is the system constant τ. It limits how fast the volatility can
// change: smaller values keep ratings steadier after upsets. The paper
// suggests 0.3–1.2; 0.5 is its worked example's value.
const DefaultTau = 0.5

// DefaultEpsilon is the convergence tolerance ε of the volatility iteration
// (step 5), on the log-variance scale, as in the paper.
const DefaultEpsilon = 0.000001

// scale converts between the Glicko and Glicko-2 scales (400/ln 10).
const scale = 173.7178

// maxIterations bounds the volatility iteration. The Illinois method
// converges in a handful of steps for any sane input; the bound only keeps a
// NaN that slipped in from a caller from looping forever.
const maxIterations = 100

// Rating is a player's Glicko-2 state on the Glicko scale.
type Rating struct {
	Rating     float64 // estimated strength, 1500 for a new player
	Deviation  float64 // RD: uncertainty of Rating, 350 for a new player
	Volatility float64 // σ: how erratic the player's results are expected to be
}

// Default is the rating of a player who has never played.
func Default() Rating {
	return Rating{Rating: DefaultRating, Deviation: DefaultDeviation, Volatility: DefaultVolatility}
}

// Provisional reports whether r is still too uncertain to be shown as an
// established rating.
func Provisional(r Rating) bool {
	return r.Deviation > ProvisionalDeviation
}

// Result is one game of a rating period, from the rated player's side.
type Result struct {
	Opponent Rating  // the opponent's rating at the start of the period
	Score    float64 // 1 for a win, 0.5 for a draw, 0 for a loss
}

// Config holds the system constants. The zero value is not useful; use
// DefaultConfig.
type Config struct {
	Tau     float64 // system constant τ
	Epsilon float64 // convergence tolerance of the volatility iteration
}

// DefaultConfig returns τ = 0.5 and ε = 0.000001.
func DefaultConfig() Config {
	return Config{Tau: DefaultTau, Epsilon: DefaultEpsilon}
}

// normalized replaces unusable constants with the defaults. A non-positive
// τ would divide by zero in step 5 and a non-positive ε would never be met,
// and a rating update is no place to fail.
func (c Config) normalized() Config {
	if !(c.Tau > 0) || math.IsInf(c.Tau, 0) {
		c.Tau = DefaultTau
	}
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
		c.Epsilon = DefaultEpsilon
	}
	return c
}

// Update rates player over one rating period with system constant tau and
// the default tolerance. See Config.Update.
func Update(player Rating, results []Result, tau float64) Rating {
	return Config{Tau: tau, Epsilon: DefaultEpsilon}.Update(player, results)
}

// Game rates a single game between a and b, where scoreA is a's score (1, 0.5
// or 0) and b scores 1-scoreA. Both players are updated from the ratings
// they had before the game, so the order of the two updates does not matter.
// Each game is its own rating period.
func Game(a, b Rating, scoreA, tau float64) (Rating, Rating) {
	return Config{Tau: tau, Epsilon: DefaultEpsilon}.Game(a, b, scoreA)
}

// Game is the package-level Game with c's constants.
func (c Config) Game(a, b Rating, scoreA float64) (Rating, Rating) {
	newA := c.Update(a, []Result{{Opponent: b, Score: scoreA}})
	newB := c.Update(b, []Result{{Opponent: a, Score: 1 - scoreA}})
	return newA, newB
}

// Update rates player over one rating period in which they played results
// (steps 1–8 of the paper). With no results only the deviation grows, by
// the player's volatility, to reflect the time that passed. The returned
// deviation never exceeds MaxDeviation.
func (c Config) Update(player Rating, results []Result) Rating {
	c = c.normalized()

	// Step 2: convert to the Glicko-2 scale.
	mu := (player.Rating - DefaultRating) / scale
	phi := player.Deviation / scale
	sigma := player.Volatility

	// Step 3 and the sums for step 4: the estimated variance v of the
	// rating from game outcomes alone, and the score surplus over what
	// the current ratings predicted.
	var info, surplus float64
	for _, res := range results {
		muJ := (res.Opponent.Rating - DefaultRating) / scale
		gJ := g(res.Opponent.Deviation / scale)
		e := expected(mu, muJ, gJ)
		info += gJ * gJ * e * (1 - e)
		surplus += gJ * (res.Score - e)
	}

	// No games, or games so lopsided that the expected score rounds to
	// exactly 0 or 1 and so carry no information: the paper's no-games
	// case, where only the deviation grows.
	if info == 0 || math.IsNaN(info) {
		player.Deviation = clampDeviation(math.Sqrt(phi*phi+sigma*sigma) * scale)
		return player
	}
	v := 1 / info

	// Step 4: the estimated improvement Δ.
	delta := v * surplus

	// Step 5: the new volatility σ'.
	sigmaNew := volatility(phi, sigma, v, delta, c.Tau, c.Epsilon)

	// Step 6: pre-rating-period deviation φ*.
	phiStar := math.Sqrt(phi*phi + sigmaNew*sigmaNew)

	// Step 7: new deviation φ' and rating μ'.
	phiNew := 1 / math.Sqrt(1/(phiStar*phiStar)+1/v)
	step := phiNew * phiNew * surplus

	// Step 8: back to the Glicko scale. The rating moves by the step
	// rather than being rebuilt from μ', so that a win can never round to
	// a loss of rating and a level draw leaves the rating bit-identical.
	return Rating{
		Rating:     player.Rating + scale*step,
		Deviation:  clampDeviation(phiNew * scale),
		Volatility: sigmaNew,
	}
}

// g weights an opponent's result by how certain their rating is: an
// opponent with a vague rating says less about the player's strength.
func g(phi float64) float64 {
	return 1 / math.Sqrt(1+3*phi*phi/(math.Pi*math.Pi))
}

// expected is E(μ, μj, φj): the expected score against the opponent.
func expected(mu, muJ, gJ float64) float64 {
	return 1 / (1 + math.Exp(-gJ*(mu-muJ)))
}

// volatility solves step 5 for σ' with the Illinois variant of regula falsi
// on x = ln σ'², following the paper's steps.
func volatility(phi, sigma, v, delta, tau, epsilon float64) float64 {
	phi2 := phi * phi
	delta2 := delta * delta
	a := math.Log(sigma * sigma)
	tau2 := tau * tau

	f := func(x float64) float64 {
		ex := math.Exp(x)
		d := phi2 + v + ex
		return ex*(delta2-phi2-v-ex)/(2*d*d) - (x-a)/tau2
	}

	// Bracket the root: f(A) and f(B) must have opposite signs.
	A := a
	var B float64
	if delta2 > phi2+v {
		B = math.Log(delta2 - phi2 - v)
	} else {
		k := 1.0
		for f(a-k*tau) < 0 && k < maxIterations {
			k++
		}
		B = a - k*tau
	}

	fA, fB := f(A), f(B)
	for i := 0; math.Abs(B-A) > epsilon && i < maxIterations; i++ {
		C := A + (A-B)*fA/(fB-fA)
		fC := f(C)
		// <= rather than <: with a strict < an exact root at C would
		// halve fA forever without shrinking |B-A|.
		if fC*fB <= 0 {
			A, fA = B, fB
		} else {
			fA /= 2
		}
		B, fB = C, fC
	}
	return math.Exp(A / 2)
}

// clampDeviation applies MaxDeviation (Lichess's cap of 350).
func clampDeviation(d float64) float64 {
	return math.Min(d, MaxDeviation)
}
