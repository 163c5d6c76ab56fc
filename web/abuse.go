package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/money"
	"wager/domain/x402"
)

// AbuseControl charges callers past an endpoint's threshold with x402
// payments (HTTP 402) while the abuse-controls flag is on.
type AbuseControl struct {
	X402    *x402.Service
	Enabled func() bool // whether the abuse-controls flag is on
	Log     *slog.Logger
	// Exempt reports users never charged (nil: none): the server's own
	// demo bots, which play through the API all day. A caller is known
	// as one only by its verified token.
	Exempt func(userID string) bool
}

// uncharged are the JSON routes that abuse controls never charge: paying
// must never require paying.
var uncharged = map[string]bool{"/payments/prepare": true, "/payments/submit": true}

// For returns the abuse-control middleware of one JSON route, or
// nil for routes that are never charged (admin routes, the payment flow).
// While the abuse-controls flag is on, each request of a caller (the user,
// else the X-App-Id and the client IP, else the client IP) counts in the
// endpoint's rolling window; past the threshold the request needs a payment in
// PAYMENT-SIGNATURE, or it is answered 402 PAYMENT_REQUIRED with the x402
// challenge. A payment spent on a request that the server then fails is
// given back (servePaid). Admins and exempt users are never charged. When the counter
// cannot be updated the request is served: the database trouble is
// logged, not blamed on the caller.
func (a *AbuseControl) For(method, path string, auth Auth) echo.MiddlewareFunc {
	if auth == AuthAdmin || uncharged[path] {
		return nil
	}
	endpoint := method + " " + path
	threshold := float64(a.X402.Limiter.Threshold(endpoint))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !a.Enabled() || IsAdmin(c) || a.exempt(c) {
				return next(c)
			}
			ctx := c.Request().Context()
			callers, userID := callersOf(c)
			n, err := a.X402.Limiter.Hit(ctx, endpoint, callers...)
			if err != nil {
				if ctx.Err() == nil {
					a.Log.Error("abuse counter", "err", err, "endpoint", endpoint)
				}
				return next(c)
			}
			caller := callers[0]
			if n <= threshold {
				return next(c)
			}
			resource := resourceURL(c)
			header := c.Request().Header.Get(x402.HeaderPaymentSignature)
			if header == "" {
				return a.paymentRequired(c, resource, "",
					fmt.Sprintf("more than %d requests to %s in %s: pay %s USDC for this request (x402), or slow down",
						int(threshold), endpoint, a.X402.Limiter.Window(), money.FormatUSDC(a.X402.Price())))
			}
			settled, err := a.X402.Redeem(ctx, header, x402.Caller{Key: caller, UserID: userID}, c.Request().URL.Path)
			var refusal *x402.Refusal
			if errors.As(err, &refusal) {
				c.Response().Header().Set(x402.HeaderPaymentResponse, x402.EncodeHeader(x402.SettlementResponse{
					Success: false, ErrorReason: refusal.Reason, Network: a.X402.Requirements().Network}))
				return a.paymentRequired(c, resource, refusal.Reason, "the payment was refused: "+refusal.Message)
			}
			if err != nil {
				return err
			}
			return a.servePaid(c, next, settled, caller)
		}
	}
}

// exempt reports whether the caller is signed in as an exempt user.
func (a *AbuseControl) exempt(c echo.Context) bool {
	id := IdentityOf(c)
	return a.Exempt != nil && id != nil && a.Exempt(id.UserID)
}

// servePaid runs the handler of a request that a payment was spent on, and
// gives the payment back when the server fails the request (a 5xx answer,
// or a panic): the client paid for an answer, not for a server error, and
// may repeat the request with the same PAYMENT-SIGNATURE. A client error
// (4xx) keeps the payment spent. Every answer but a server error carries
// PAYMENT-RESPONSE.
func (a *AbuseControl) servePaid(c echo.Context, next echo.HandlerFunc, settled x402.SettlementResponse, caller string) error {
	c.Response().Before(func() {
		if c.Response().Status < http.StatusInternalServerError {
			c.Response().Header().Set(x402.HeaderPaymentResponse, x402.EncodeHeader(settled))
		}
	})
	served := false
	defer func() {
		if served {
			return
		}
		// The request may be cancelled already (a client that went away).
		ctx := context.WithoutCancel(c.Request().Context())
		if err := a.X402.Release(ctx, settled.Transaction, caller); err != nil {
			a.Log.Error("give back the payment of a failed request", "err", err, "signature", settled.Transaction)
		}
	}()
	err := next(c)
	served = !serverError(c, err)
	return err
}

// serverError reports whether a request ends in a server error: the
// handler's error maps to a 5xx status, or the handler wrote a 5xx answer.
func serverError(c echo.Context, err error) bool {
	if err != nil && !c.Response().Committed {
		return StatusOf(AsError(err).Code) >= http.StatusInternalServerError
	}
	return c.Response().Status >= http.StatusInternalServerError
}

// paymentRequired answers 402 with the x402 challenge in the body and,
// base64-encoded, in the PAYMENT-REQUIRED header. When a presented payment
// was refused, the challenge's error is the message and the body's reason
// the x402 error code (also in PAYMENT-RESPONSE).
func (a *AbuseControl) paymentRequired(c echo.Context, resource, reason, message string) error {
	why := ""
	if reason != "" {
		why = message
	}
	challenge := a.X402.Challenge(resource, why)
	e := domain.Errorf(domain.CodePaymentRequired, "%s", message)
	if reason != "" {
		e = e.With("reason", reason)
	}
	c.Response().Header().Set(x402.HeaderPaymentRequired, x402.EncodeHeader(challenge))
	return e.With("paymentRequired", challenge)
}

// callersOf returns the abuse-control identities of a request, the first
// naming it, and the user id: the user; else the agent app it names and
// its client IP, both counted (a header is the caller's to choose: new app
// ids must not buy new allowances); else the client IP.
func callersOf(c echo.Context) ([]string, string) {
	if id := IdentityOf(c); id != nil {
		return []string{"user:" + id.UserID}, id.UserID
	}
	ip := "ip:" + c.RealIP()
	if app := strings.TrimSpace(c.Request().Header.Get("X-App-Id")); app != "" && len(app) <= 128 {
		return []string{"app:" + app, ip}, ""
	}
	return []string{ip}, ""
}

// resourceURL is the absolute URL of the request, the x402 resource.
func resourceURL(c echo.Context) string {
	return c.Scheme() + "://" + c.Request().Host + c.Request().URL.RequestURI()
}
