package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/users"
	"wager/domain/x402"
	"wager/web"
)

// Payments serves the 402 payment flow and the agents' maintenance check.
type Payments struct {
	Users *users.Service
	Flags *flags.Service
	X402  *x402.Service
}

// Routes registers the 402 payment flow and the agents'
// maintenance check.
func (h *Payments) Routes(r Router) {
	r.JSON(http.MethodPost, "/payments/prepare", h.preparePayment, web.Op{Tag: "payments", Auth: web.AuthRequired,
		Summary: "Prepare the payment that satisfies a 402 challenge",
		Description: "Send the paymentRequired of the 402 answer unchanged. Answers an unsigned x402 exact-scheme Solana transaction " +
			"(compute budget, TransferChecked of the price in USDC to the vault's token account, a memo nonce; the platform pays the fee). " +
			"Sign it with your wallet and submit it before expiresAt. Never charged itself.",
		Request: PaymentPrepareRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusConflict, http.StatusServiceUnavailable}})
	r.JSON(http.MethodPost, "/payments/submit", h.submitPayment, web.Op{Tag: "payments", Auth: web.AuthRequired,
		Summary: "Submit the signed payment; answers once it is settled",
		Description: "Then repeat the original request with the header PAYMENT-SIGNATURE: <paymentSignature>. The answer carries " +
			"PAYMENT-RESPONSE (base64 JSON SettlementResponse). A payment serves one request of the resource it was prepared for, " +
			"by you; a reused one answers 402, and a request answered with a server error (5xx) does not use it up. " +
			"Submitting the same intent again answers the same result. " + feePayerBudgets,
		Request: SubmitRequest{}, Response: x402.Submitted{},
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable}})
	r.Ops(http.MethodGet, "/service_check_maintenance", h.checkMaintenance, web.Op{
		Summary: "Agent tool service_check_maintenance: is the service in maintenance, and the feature flags",
		Description: "Stays available during maintenance; never 426, never 402. retryAfterSeconds says when to check again " +
			"(0 when the service is up).",
		Response: MaintenanceStatus{}})
}

// PaymentPrepareRequest is the body of POST /payments/prepare.
type PaymentPrepareRequest struct {
	PaymentRequired x402.PaymentRequired `json:"paymentRequired" doc:"the paymentRequired member of the 402 answer (also in its PAYMENT-REQUIRED header)"`
}

func (h *Payments) preparePayment(c echo.Context) error {
	var req PaymentPrepareRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := currentUser(c, h.Users)
	if err != nil {
		return err
	}
	p, err := h.X402.Prepare(c.Request().Context(), u, req.PaymentRequired)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *Payments) submitPayment(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	s, err := h.X402.Submit(c.Request().Context(), web.IdentityOf(c).UserID, req.IntentID, req.SignedTransaction)
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

func (h *Payments) checkMaintenance(c echo.Context) error {
	s := MaintenanceStatus{Flags: h.Flags.Snapshot(), Message: "The service is up."}
	if s.Maintenance = h.Flags.Enabled(flags.Maintenance); s.Maintenance {
		s.RetryAfterSeconds = int(MaintenanceRetry.Seconds())
		s.Message = "The service is down for maintenance. Please try again in a few minutes."
	}
	return c.JSON(http.StatusOK, s)
}
