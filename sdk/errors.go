package wager

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"wager/sdk/api"
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

// errorBody is an error answer's JSON.
type errorBody struct {
	Code            string            `json:"code"`
	Message         string            `json:"message"`
	Fields          map[string]string `json:"fields"`
	MinSDKVersion   string            `json:"minSdkVersion"`
	PaymentRequired json.RawMessage   `json:"paymentRequired"`
}

// apiError turns an answer of status 400 or more into an *APIError, an
// *UpgradeRequiredError (426) or a *PaymentRequiredError (402).
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
