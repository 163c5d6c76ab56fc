package wager

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"wager.example.com/sdk/api"
)

// APIError is an error answer of the API: its status and the body's code
// and message (API.md "Errors"). Every call of the client returns one for
// a status of 400 or more; find it with errors.As.
type APIError struct {
	Status  int
	Code    string // UPPER_SNAKE, e.g. NOT_FOUND
	Message string // for people
	// Fields are the reasons of a VALIDATION_ERROR, by field.
	Fields map[string]string
	// RetryAfter is the Retry-After of a 429 or 503 (0 when absent).
	RetryAfter time.Duration
	// Body is the whole answer, for the code-specific members.
	Body json.RawMessage
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("wager: HTTP %d", e.Status)
	}
	return fmt.Sprintf("wager: %d %s: %s", e.Status, e.Code, e.Message)
}

// UpgradeRequiredError is the 426 SDK_VERSION_OUTDATED answer: this SDK's
// Version is below the server's minimum. It unwraps to its *APIError.
type UpgradeRequiredError struct {
	MinSDKVersion string // the version to upgrade to
	Err           *APIError
}

func (e *UpgradeRequiredError) Error() string {
	return fmt.Sprintf("wager: SDK version %s is outdated: the server needs %s or later (%s)", Version, e.MinSDKVersion, e.Err.Message)
}

func (e *UpgradeRequiredError) Unwrap() error { return e.Err }

// PaymentRequiredError is a 402 PAYMENT_REQUIRED answer that the client did
// not pay: automatic payment was off, the amount was over a cap, or the
// payment was refused. Nothing was paid for this request unless Paid is
// true (the server then refused the payment itself). It unwraps to its
// *APIError.
type PaymentRequiredError struct {
	// Requirement is the x402 PaymentRequired of the answer.
	Requirement api.PaymentRequired
	// AmountMinor, Asset, PayTo and Network are those of the first
	// "exact" way to pay (USDC minor units, the mint, the recipient, the
	// CAIP-2 cluster).
	AmountMinor           int64
	Asset, PayTo, Network string
	// Reason says why the client did not pay (or what refused the
	// payment).
	Reason string
	// Paid is true when a payment was made and the repeated request was
	// refused anyway.
	Paid bool
	Err  *APIError
}

func (e *PaymentRequiredError) Error() string {
	return fmt.Sprintf("wager: payment of %d USDC minor units required: %s (%s)", e.AmountMinor, e.Reason, e.Err.Message)
}

func (e *PaymentRequiredError) Unwrap() error { return e.Err }

// LimitExceededError is a 409 LIMIT_EXCEEDED answer: one of the player's
// own limits (or a pool's or market's cap) refused the request. It
// unwraps to its *APIError.
type LimitExceededError struct {
	// Limit names what refused it: a player limit's dotted name
	// (depositMinor.day, lossMinor.week, stakeMaxMinor), or pool or
	// market for the caps of a game.
	Limit string
	// ResetsAt is when waiting frees enough of the limit; nil when
	// waiting never does (stakeMaxMinor, an amount above the limit
	// itself, a cap).
	ResetsAt *time.Time
	Err      *APIError
}

func (e *LimitExceededError) Error() string {
	if e.ResetsAt == nil {
		return fmt.Sprintf("wager: limit %s reached: %s", e.Limit, e.Err.Message)
	}
	return fmt.Sprintf("wager: limit %s reached until %s: %s", e.Limit, e.ResetsAt.Format(time.RFC3339), e.Err.Message)
}

func (e *LimitExceededError) Unwrap() error { return e.Err }

// SelfExcludedError is a 403 SELF_EXCLUDED answer: the player took a
// time-out or excluded themselves, and money in is closed until Until
// (nil: for good). Money out still works. It unwraps to its *APIError.
type SelfExcludedError struct {
	Until *time.Time
	Kind  string // timeout or self-exclusion
	Err   *APIError
}

func (e *SelfExcludedError) Error() string {
	if e.Until == nil {
		return "wager: self-excluded for good: " + e.Err.Message
	}
	return fmt.Sprintf("wager: self-excluded until %s: %s", e.Until.Format(time.RFC3339), e.Err.Message)
}

func (e *SelfExcludedError) Unwrap() error { return e.Err }

// AgeUnconfirmedError is a 403 AGE_UNCONFIRMED answer (the player must
// confirm their age before money goes in: POST /users/me/age-confirmation)
// or, with Underage, a 403 UNDERAGE one (the account is refused money in
// for good). It unwraps to its *APIError.
type AgeUnconfirmedError struct {
	Underage bool
	Err      *APIError
}

func (e *AgeUnconfirmedError) Error() string {
	if e.Underage {
		return "wager: underage: " + e.Err.Message
	}
	return "wager: age not confirmed: " + e.Err.Message
}

func (e *AgeUnconfirmedError) Unwrap() error { return e.Err }

// RegionRestrictedError is a 403 REGION_RESTRICTED answer: money does not
// go in from the client's country (withdrawals, sells, cancels and
// redemptions still work). It unwraps to its *APIError.
type RegionRestrictedError struct {
	Country string // ISO 3166-1 alpha-2
	Err     *APIError
}

func (e *RegionRestrictedError) Error() string {
	return fmt.Sprintf("wager: region %s restricted: %s", e.Country, e.Err.Message)
}

func (e *RegionRestrictedError) Unwrap() error { return e.Err }

// InsufficientFundsError is a 409 INSUFFICIENT_FUNDS answer: the
// available platform balance does not cover a stake, an entry fee or a
// buy order (deposit first: Deposit). It unwraps to its *APIError.
type InsufficientFundsError struct {
	// NeededMinor and AvailableMinor are what the request needed and what
	// was available, in USDC minor units (0 when the answer does not say).
	NeededMinor, AvailableMinor int64
	Err                         *APIError
}

func (e *InsufficientFundsError) Error() string {
	return fmt.Sprintf("wager: insufficient funds (%d USDC minor units needed, %d available): %s", e.NeededMinor, e.AvailableMinor, e.Err.Message)
}

func (e *InsufficientFundsError) Unwrap() error { return e.Err }

// errorBody is an error answer's JSON.
type errorBody struct {
	Code            string            `json:"code"`
	Message         string            `json:"message"`
	Fields          map[string]string `json:"fields"`
	MinSDKVersion   string            `json:"minSdkVersion"`
	PaymentRequired json.RawMessage   `json:"paymentRequired"`
	// Player protection's members.
	Limit    string     `json:"limit"`
	ResetsAt *time.Time `json:"resetsAt"`
	Until    *time.Time `json:"until"`
	Kind     string     `json:"kind"`
	Country  string     `json:"country"`
	// INSUFFICIENT_FUNDS' members.
	NeededMinor    int64 `json:"neededMinor"`
	AvailableMinor int64 `json:"availableMinor"`
}

// apiError turns an answer of status 400 or more into an *APIError, an
// *UpgradeRequiredError (426), a *PaymentRequiredError (402), or one of
// player protection's refusals: *LimitExceededError,
// *SelfExcludedError, *AgeUnconfirmedError, *RegionRestrictedError, or an
// *InsufficientFundsError.
func apiError(resp *http.Response, body []byte) error {
	var b errorBody
	json.Unmarshal(body, &b) // a body that is not JSON leaves the code empty
	e := &APIError{Status: resp.StatusCode, Code: b.Code, Message: b.Message, Fields: b.Fields, Body: body}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	switch resp.StatusCode {
	case http.StatusUpgradeRequired:
		min := b.MinSDKVersion
		if min == "" {
			min = resp.Header.Get("X-Min-SDK-Version")
		}
		return &UpgradeRequiredError{MinSDKVersion: min, Err: e}
	case http.StatusPaymentRequired:
		p := &PaymentRequiredError{Err: e, Reason: "automatic payment is off"}
		if len(b.PaymentRequired) > 0 {
			json.Unmarshal(b.PaymentRequired, &p.Requirement)
		}
		if r, ok := exactRequirement(p.Requirement); ok {
			p.AmountMinor, _ = strconv.ParseInt(r.Amount, 10, 64)
			p.Asset, p.PayTo, p.Network = r.Asset, r.PayTo, r.Network
		}
		return p
	}
	switch b.Code {
	case "LIMIT_EXCEEDED":
		return &LimitExceededError{Limit: b.Limit, ResetsAt: b.ResetsAt, Err: e}
	case "SELF_EXCLUDED":
		return &SelfExcludedError{Until: b.Until, Kind: b.Kind, Err: e}
	case "AGE_UNCONFIRMED", "UNDERAGE":
		return &AgeUnconfirmedError{Underage: b.Code == "UNDERAGE", Err: e}
	case "REGION_RESTRICTED":
		return &RegionRestrictedError{Country: b.Country, Err: e}
	case "INSUFFICIENT_FUNDS":
		return &InsufficientFundsError{NeededMinor: b.NeededMinor, AvailableMinor: b.AvailableMinor, Err: e}
	}
	return e
}

// exactRequirement returns the first way to pay of the x402 "exact"
// scheme.
func exactRequirement(pr api.PaymentRequired) (api.PaymentsRequirements, bool) {
	for _, r := range pr.Accepts {
		if r.Scheme == "exact" {
			return r, true
		}
	}
	return api.PaymentsRequirements{}, false
}
