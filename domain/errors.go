// Package domain holds the business layer shared by the JSON API and the
// browser pages: error codes, shared types, and one sub-package per bounded
// context. Nothing here imports Echo, templ or net/http.
package domain

import (
	"errors"
	"fmt"
)

// Error codes. Each maps to exactly one HTTP status in web.StatusOf.
const (
	CodeValidation         = "VALIDATION_ERROR"
	CodeInvalidJSON        = "INVALID_JSON"
	CodeInvalidMove        = "INVALID_MOVE"
	CodeInvalidSDKVersion  = "INVALID_SDK_VERSION"
	CodeAppIDRequired      = "APP_ID_REQUIRED"
	CodeUnauthorized       = "UNAUTHORIZED"
	CodePaymentRequired    = "PAYMENT_REQUIRED"
	CodeForbidden          = "FORBIDDEN"
	CodeNotAPlayer         = "NOT_A_PLAYER"
	CodeAdminOnly          = "ADMIN_ONLY"
	CodeLinkedToPlayer     = "LINKED_TO_PLAYER"
	CodeConflictOfInterest = "CONFLICT_OF_INTEREST"
	CodeAgentsNotAllowed   = "AGENTS_NOT_ALLOWED"
	CodeSelfExcluded       = "SELF_EXCLUDED"
	CodeAgeUnconfirmed     = "AGE_UNCONFIRMED"
	CodeUnderage           = "UNDERAGE"
	CodeRegionRestricted   = "REGION_RESTRICTED"
	CodeNotFound           = "NOT_FOUND"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodeGameNotActive      = "GAME_NOT_ACTIVE"
	CodeNotYourTurn        = "NOT_YOUR_TURN"
	CodeAlreadyMoved       = "ALREADY_MOVED"
	CodeConflict           = "CONFLICT"
	CodeInsufficientFunds  = "INSUFFICIENT_FUNDS"
	CodeAlreadySubmitted   = "ALREADY_SUBMITTED"
	CodeBettingClosed      = "BETTING_CLOSED"
	CodeInsufficientShares = "INSUFFICIENT_SHARES"
	CodeLimitExceeded      = "LIMIT_EXCEEDED"
	CodeLinkedAccount      = "LINKED_ACCOUNT"
	CodePayloadTooLarge    = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE"
	CodeSDKVersionOutdated = "SDK_VERSION_OUTDATED"
	CodeRateLimited        = "RATE_LIMITED"
	CodeMaintenance        = "MAINTENANCE"
	CodeUnavailable        = "UNAVAILABLE"
	CodeInternal           = "INTERNAL"
)

// Error is the one error type that crosses from the domain to the clients.
// Code is machine-readable (UPPER_SNAKE), Message is for humans, Fields names
// invalid inputs for VALIDATION_ERROR, and Extra carries code-specific
// members of the JSON error body (for example minSdkVersion).
type Error struct {
	Code    string
	Message string
	Fields  map[string]string
	Extra   map[string]any
	cause   error // for the logs, never for clients
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap returns the cause of an Unavailable error.
func (e *Error) Unwrap() error { return e.cause }

// Unavailable is an UNAVAILABLE error: something the request depends on
// (the Solana network) did not answer. The cause is logged, not shown: it
// may name internal addresses or keys in URLs.
func Unavailable(message string, cause error) *Error {
	return &Error{Code: CodeUnavailable, Message: message, cause: cause}
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns a VALIDATION_ERROR naming each invalid field and why.
func Invalid(fields map[string]string) *Error {
	return &Error{Code: CodeValidation, Message: "some fields are invalid", Fields: fields}
}

// With returns a copy of e with an extra member in its JSON body.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = make(map[string]any, len(e.Extra)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

// ErrorCode returns the code of the *Error in err's chain, or INTERNAL when
// there is none (every error that is not a domain error is a bug).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Validator collects field errors; Err returns nil when there are none.
type Validator map[string]string

// Check records reason for field when ok is false; the first reason wins.
func (v Validator) Check(ok bool, field, reason string) {
	if !ok {
		if _, seen := v[field]; !seen {
			v[field] = reason
		}
	}
}

// Err returns a VALIDATION_ERROR for the collected fields, or nil.
func (v Validator) Err() error {
	if len(v) == 0 {
		return nil
	}
	return Invalid(v)
}

// Text is UserText that records the failure in v instead of returning it.
func (v Validator) Text(field, text string, multiline bool, max int) string {
	clean, err := UserText(field, text, multiline, max)
	var e *Error
	if errors.As(err, &e) {
		for f, reason := range e.Fields {
			v.Check(false, f, reason)
		}
	}
	return clean
}
