package wager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager.example.com/sdk/api"
)

// WithAutoPay lets the client pay 402 PAYMENT_REQUIRED answers by itself
// (API.md "Payments"): it prepares the x402 payment, signs it with the
// wallet, submits it, and repeats the request once with its
// PAYMENT-SIGNATURE. It pays only when the amount is at most
// maxPerRequestMinor and, with what it paid in the last hour, at most
// maxPerHourMinor (USDC minor units), and only the platform: the
// challenge's payTo must be the balance answer's deposit address and its
// asset the USDC mint, and the prepared transaction must be exactly that
// transfer (else the *PaymentRequiredError's Reason says it was refused
// before signing). Without it, a 402 is a *PaymentRequiredError and
// nothing is paid.
func WithAutoPay(maxPerRequestMinor, maxPerHourMinor int64) Option {
	return func(c *Client) {
		c.autoPay = NewSpendingCap(maxPerRequestMinor, maxPerHourMinor, func() time.Time { return c.now() })
	}
}

// WithSpendingCap is WithAutoPay within a cap the caller shares: its own
// spending and the client's automatic payments count against the same
// limits.
func WithSpendingCap(cap *SpendingCap) Option { return func(c *Client) { c.autoPay = cap } }

// SpentLastHour returns what automatic payments (and, with
// WithSpendingCap, the cap's other users) spent in the last hour, in USDC
// minor units.
func (c *Client) SpentLastHour() int64 {
	if c.autoPay == nil {
		return 0
	}
	return c.autoPay.SpentLastHour()
}

// reserve counts amount against the cap of automatic payments, or says why
// the client does not pay it.
func (c *Client) reserve(amount int64) (release func(), why string) {
	switch {
	case c.autoPay == nil:
		return nil, "automatic payment is off (WithAutoPay)"
	case c.wallet == nil:
		return nil, "automatic payment needs a wallet (WithWallet)"
	case amount <= 0:
		return nil, "the challenge names no amount to pay"
	}
	release, err := c.autoPay.Reserve(amount)
	var refused *CapError
	if errors.As(err, &refused) {
		return nil, refused.Reason
	}
	if err != nil {
		return nil, err.Error()
	}
	return release, ""
}

// payAndRepeat handles a 402 answer to req: pays it when allowed and
// repeats req once with the payment; otherwise returns the
// *PaymentRequiredError.
func (c *Client) payAndRepeat(req *http.Request, body []byte, token string, resp *http.Response) (*http.Response, error) {
	_, err := checked(resp)
	var pre *PaymentRequiredError
	if !errors.As(err, &pre) {
		return nil, err
	}
	var raw struct {
		PaymentRequired json.RawMessage `json:"paymentRequired"`
	}
	if json.Unmarshal(pre.Err.Body, &raw) != nil || len(raw.PaymentRequired) == 0 {
		pre.Reason = "the answer carries no paymentRequired"
		return nil, pre
	}
	release, why := c.reserve(pre.AmountMinor)
	if release == nil {
		pre.Reason = why
		return nil, pre
	}
	ctx := context.WithValue(req.Context(), noPayKey{}, true)
	paymentSignature, paid, err := c.pay(ctx, raw.PaymentRequired, pre)
	if err != nil {
		if !paid {
			release()
		}
		pre.Reason, pre.Paid = "the payment failed: "+err.Error(), paid
		return nil, pre
	}
	again, err := c.send(req, body, token, paymentSignature)
	if err != nil {
		return nil, err
	}
	out, err := checked(again)
	if errors.As(err, &pre) {
		pre.Reason, pre.Paid = "the server refused the payment", true
	}
	return out, err
}

// pay runs the x402 payment of a challenge through the API: prepare,
// sign, submit. It signs only a transfer of the challenge's amount and
// asset to the platform's deposit address (the payee of every 402), with
// the challenge's fee payer, never the wallet, paying the fees; anything
// else is refused before signing. It returns the PaymentSignature to
// repeat the request with, and whether the payment may have been made (it
// was submitted).
func (c *Client) pay(ctx context.Context, paymentRequired json.RawMessage, pre *PaymentRequiredError) (paymentSignature string, submitted bool, err error) {
	pf, err := c.platform(ctx)
	if err != nil {
		return "", false, err
	}
	req, _ := exactRequirement(pre.Requirement)
	switch {
	case req.PayTo != pf.deposit.String():
		return "", false, refuse("the challenge pays %s, not the platform's %s", req.PayTo, pf.deposit)
	case req.Asset != pf.mint.String():
		return "", false, refuse("the challenge pays in %s, not the platform's USDC %s", req.Asset, pf.mint)
	}
	feePayer, err := solana.PublicKeyFromBase58(req.Extra.FeePayer)
	if err != nil {
		return "", false, refuse("the challenge's fee payer %q is not an address", req.Extra.FeePayer)
	}
	body, _ := json.Marshal(map[string]json.RawMessage{"paymentRequired": paymentRequired})
	p, err := c.API.PostPaymentsPrepareWithBodyWithResponse(ctx, nil, "application/json", bytes.NewReader(body))
	if err != nil {
		return "", false, err
	}
	if p.JSON200 == nil {
		return "", false, fmt.Errorf("prepare answered %d", p.StatusCode())
	}
	signed, err := c.signPrepared(p.JSON200.Transaction,
		&expectation{feePayer: feePayer, mint: pf.mint, to: pf.deposit, amount: pre.AmountMinor})
	if err != nil {
		return "", false, err
	}
	s, err := c.API.PostPaymentsSubmitWithResponse(ctx, nil, api.SubmitRequest{IntentId: p.JSON200.IntentId, SignedTransaction: signed})
	if err != nil {
		return "", true, err
	}
	if s.JSON200 == nil {
		return "", true, fmt.Errorf("submit answered %d", s.StatusCode())
	}
	return s.JSON200.PaymentSignature, true, nil
}
