package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/payments"
	"wager/web"
)

// paymentRoutes registers the 402 payment flow and the agents'
// maintenance check.
func (a *App) paymentRoutes(r *router) {
	r.json(http.MethodPost, "/payments/prepare", a.preparePayment, web.Op{Tag: "payments", Auth: web.AuthRequired,
		Summary: "Prepare the payment that satisfies a 402 challenge",
		Description: "Send the paymentRequired of the 402 answer unchanged. Answers an unsigned x402 exact-scheme Solana transaction " +
			"(compute budget, TransferChecked of the price in USDC to the vault's token account, a memo nonce; the platform pays the fee). " +
			"Sign it with your wallet and submit it before expiresAt. Never charged itself.",
		Request: PaymentPrepareRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusConflict, http.StatusServiceUnavailable}})
	r.json(http.MethodPost, "/payments/submit", a.submitPayment, web.Op{Tag: "payments", Auth: web.AuthRequired,
		Summary: "Submit the signed payment; answers once it is settled",
		Description: "Then repeat the original request with the header PAYMENT-SIGNATURE: <paymentSignature>. The answer carries " +
			"PAYMENT-RESPONSE (base64 JSON SettlementResponse). A payment serves one request of the resource it was prepared for, " +
			"by you; a reused one answers 402, and a request answered with a server error (5xx) does not use it up. " +
			"Submitting the same intent again answers the same result.",
		Request: SubmitRequest{}, Response: payments.Submitted{},
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusServiceUnavailable}})
	r.ops(http.MethodGet, "/service_check_maintenance", a.checkMaintenance, web.Op{
		Summary: "Agent tool service_check_maintenance: is the service in maintenance, and the feature flags",
		Description: "Stays available during maintenance; never 426, never 402. retryAfterSeconds says when to check again " +
			"(0 when the service is up).",
		Response: MaintenanceStatus{}})
}

// PaymentPrepareRequest is the body of POST /payments/prepare.
type PaymentPrepareRequest struct {
	PaymentRequired payments.PaymentRequired `json:"paymentRequired" doc:"the paymentRequired member of the 402 answer (also in its PAYMENT-REQUIRED header)"`
}

func (a *App) preparePayment(c echo.Context) error {
	var req PaymentPrepareRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := a.currentUser(c)
	if err != nil {
		return err
	}
	p, err := a.Payments.Prepare(c.Request().Context(), u, req.PaymentRequired)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (a *App) submitPayment(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	s, err := a.Payments.Submit(c.Request().Context(), web.IdentityOf(c).UserID, req.IntentID, req.SignedTransaction)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

// MaintenanceStatus is the answer of GET /service_check_maintenance.
type MaintenanceStatus struct {
	Maintenance       bool            `json:"maintenance"`
	Message           string          `json:"message"`
	RetryAfterSeconds int             `json:"retryAfterSeconds" doc:"when to check again; 0 when not in maintenance"`
	Flags             map[string]bool `json:"flags" doc:"every feature flag by name"`
}

func (a *App) checkMaintenance(c echo.Context) error {
	s := MaintenanceStatus{Flags: a.Flags.Snapshot(), Message: "the service is up"}
	if s.Maintenance = a.Flags.Enabled(flags.Maintenance); s.Maintenance {
		s.RetryAfterSeconds = int(maintenanceRetry.Seconds())
		s.Message = "the service is down for maintenance; retry in a few minutes"
	}
	return c.JSON(http.StatusOK, s)
}

// newPayments builds the abuse counters and the payment service from the
// configuration.
func (a *App) newPayments() *payments.Service {
	limiter := payments.NewLimiter(a.DB, a.now, a.Config.AbuseThreshold, a.Config.AbuseWindow, a.Config.AbuseOverrides)
	return payments.New(a.DB, a.Money, a.Keys, limiter, a.now, a.log, payments.Config{
		PriceMinor: a.Config.AbusePrice, Network: payments.NetworkOf(a.Config.ChainID())})
}

// checkAbuseOverrides fails when ABUSE_OVERRIDES names an endpoint that
// no charged route has.
func (a *App) checkAbuseOverrides() error {
	if unknown := a.Payments.Limiter.UnknownOverrides(); len(unknown) > 0 {
		return fmt.Errorf("invalid configuration: ABUSE_OVERRIDES names %s, which is not a charged endpoint (write METHOD /route as in the OpenAPI document)",
			strings.Join(unknown, ", "))
	}
	return nil
}

// uncharged are the JSON routes that abuse controls never charge: paying
// must never require paying.
var uncharged = map[string]bool{"/payments/prepare": true, "/payments/submit": true}

// abuseControl returns the abuse-control middleware of one JSON route, or
// nil for routes that are never charged (admin routes, the payment flow).
// While the abuse-controls flag is on, each request of a caller (the user,
// else the X-App-Id and the client IP, else the client IP) counts in the
// endpoint's rolling window; past the threshold the request needs a payment in
// PAYMENT-SIGNATURE, or it is answered 402 PAYMENT_REQUIRED with the x402
// challenge. A payment spent on a request that the server then fails is
// given back (servePaid). Admins are never charged. When the counter
// cannot be updated the request is served: the database trouble is
// logged, not blamed on the caller.
func (a *App) abuseControl(method, path string, auth web.Auth) echo.MiddlewareFunc {
	if auth == web.AuthAdmin || uncharged[path] {
		return nil
	}
	endpoint := method + " " + path
	threshold := float64(a.Payments.Limiter.Threshold(endpoint))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !a.Flags.Enabled(flags.AbuseControls) || web.IsAdmin(c) {
				return next(c)
			}
			ctx := c.Request().Context()
			callers, userID := callersOf(c)
			n, err := a.Payments.Limiter.Hit(ctx, endpoint, callers...)
			if err != nil {
				if ctx.Err() == nil {
					a.log.Error("abuse counter", "err", err, "endpoint", endpoint)
				}
				return next(c)
			}
			caller := callers[0]
			if n <= threshold {
				return next(c)
			}
			resource := resourceURL(c)
			header := c.Request().Header.Get(payments.HeaderPaymentSignature)
			if header == "" {
				return a.paymentRequired(c, resource, "",
					fmt.Sprintf("more than %d requests to %s in %s: pay %s USDC for this request (x402), or slow down",
						int(threshold), endpoint, a.Payments.Limiter.Window(), money.FormatUSDC(a.Payments.Price())))
			}
			settled, err := a.Payments.Redeem(ctx, header, payments.Caller{Key: caller, UserID: userID}, c.Request().URL.Path)
			var refusal *payments.Refusal
			if errors.As(err, &refusal) {
				c.Response().Header().Set(payments.HeaderPaymentResponse, payments.EncodeHeader(payments.SettlementResponse{
					Success: false, ErrorReason: refusal.Reason, Network: a.Payments.Requirements().Network}))
				return a.paymentRequired(c, resource, refusal.Reason, "the payment was refused: "+refusal.Message)
			}
			if err != nil {
				return err
			}
			return a.servePaid(c, next, settled, caller)
		}
	}
}

// servePaid runs the handler of a request that a payment was spent on, and
// gives the payment back when the server fails the request (a 5xx answer,
// or a panic): the client paid for an answer, not for a server error, and
// may repeat the request with the same PAYMENT-SIGNATURE. A client error
// (4xx) keeps the payment spent. Every answer but a server error carries
// PAYMENT-RESPONSE.
func (a *App) servePaid(c echo.Context, next echo.HandlerFunc, settled payments.SettlementResponse, caller string) error {
	c.Response().Before(func() {
		if c.Response().Status < http.StatusInternalServerError {
			c.Response().Header().Set(payments.HeaderPaymentResponse, payments.EncodeHeader(settled))
		}
	})
	served := false
	defer func() {
		if served {
			return
		}
		// The request may be cancelled already (a client that went away).
		ctx := context.WithoutCancel(c.Request().Context())
		if err := a.Payments.Release(ctx, settled.Transaction, caller); err != nil {
			a.log.Error("give back the payment of a failed request", "err", err, "signature", settled.Transaction)
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
		return web.StatusOf(web.AsError(err).Code) >= http.StatusInternalServerError
	}
	return c.Response().Status >= http.StatusInternalServerError
}

// paymentRequired answers 402 with the x402 challenge in the body and,
// base64-encoded, in the PAYMENT-REQUIRED header. When a presented payment
// was refused, the challenge's error is the message and the body's reason
// the x402 error code (also in PAYMENT-RESPONSE).
func (a *App) paymentRequired(c echo.Context, resource, reason, message string) error {
	why := ""
	if reason != "" {
		why = message
	}
	challenge := a.Payments.Challenge(resource, why)
	e := domain.Errorf(domain.CodePaymentRequired, "%s", message)
	if reason != "" {
		e = e.With("reason", reason)
	}
	c.Response().Header().Set(payments.HeaderPaymentRequired, payments.EncodeHeader(challenge))
	return e.With("paymentRequired", challenge)
}

// callersOf returns the abuse-control identities of a request, the first
// naming it, and the user id: the user; else the agent app it names and
// its client IP, both counted (a header is the caller's to choose: new app
// ids must not buy new allowances); else the client IP.
func callersOf(c echo.Context) ([]string, string) {
	if id := web.IdentityOf(c); id != nil {
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

// parseAbuseOverrides reads ABUSE_OVERRIDES: comma-separated
// "METHOD /route=threshold" entries, such as
// "POST /lobbies=30,GET /games/live=1200". It returns an error saying what
// is wrong with the first bad entry.
func parseAbuseOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		endpoint, n, ok := strings.Cut(item, "=")
		method, path, ok2 := strings.Cut(strings.TrimSpace(endpoint), " ")
		path = strings.TrimSpace(path)
		threshold, err := strconv.Atoi(strings.TrimSpace(n))
		switch {
		case !ok || !ok2:
			return nil, fmt.Errorf("entry %q must be METHOD /route=threshold, such as POST /lobbies=30", item)
		case !validMethod[method]:
			return nil, fmt.Errorf("entry %q: %q is not an HTTP method (GET, POST, PUT, PATCH, DELETE)", item, method)
		case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#"):
			return nil, fmt.Errorf("entry %q: the route must start with / and be written as in the API, such as /games/:id/state", item)
		case err != nil || threshold < 1:
			return nil, fmt.Errorf("entry %q: the threshold must be a whole number of requests, at least 1", item)
		}
		out[method+" "+path] = threshold
	}
	return out, nil
}

var validMethod = map[string]bool{http.MethodGet: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true}
