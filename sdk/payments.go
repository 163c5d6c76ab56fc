package wager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"wager/sdk/api"
)

// AutoPay lets the client pay 402 PAYMENT_REQUIRED answers by itself
// (API.md "Payments"): it prepares the x402 payment, signs it with the
// wallet, submits it, and repeats the request once with its
// PAYMENT-SIGNATURE. It pays only when the amount is at most
// MaxPerRequestMinor and, with what it paid in the last hour, at most
// MaxPerHourMinor (USDC minor units; 1 USDC = 1000000).
type AutoPay struct {
	MaxPerRequestMinor int64
	MaxPerHourMinor    int64
}

// WithAutoPay allows automatic payment of 402 answers within the caps.
// Without it, a 402 is a *PaymentRequiredError and nothing is paid.
func WithAutoPay(maxPerRequestMinor, maxPerHourMinor int64) Option {
	return func(c *Client) {
		c.autoPay = &AutoPay{MaxPerRequestMinor: maxPerRequestMinor, MaxPerHourMinor: maxPerHourMinor}
	}
}

// spending is one automatic payment.
type spending struct {
	at     time.Time
	amount int64
}

// SpentLastHour returns what automatic payments cost in the last hour, in
// USDC minor units.
func (c *Client) SpentLastHour() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spentLocked()
}

func (c *Client) spentLocked() int64 {
	since := c.now().Add(-time.Hour)
	var sum int64
	kept := c.spent[:0]
	for _, s := range c.spent {
		if s.at.After(since) {
			kept = append(kept, s)
			sum += s.amount
		}
	}
	c.spent = kept
	return sum
}

// reserve counts amount against the caps, or says why it does not fit.
// The reservation is released only when the payment surely did not
// happen.
func (c *Client) reserve(amount int64) (release func(), why string) {
	switch {
	case c.autoPay == nil:
		return nil, "automatic payment is off (WithAutoPay)"
	case c.wallet == nil:
		return nil, "automatic payment needs a wallet (WithWallet)"
	case amount <= 0:
		return nil, "the challenge names no amount to pay"
	case amount > c.autoPay.MaxPerRequestMinor:
		return nil, fmt.Sprintf("%d is over the cap of %d per request", amount, c.autoPay.MaxPerRequestMinor)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if spent := c.spentLocked(); spent+amount > c.autoPay.MaxPerHourMinor {
		return nil, fmt.Sprintf("%d more would exceed the cap of %d per hour (%d spent)", amount, c.autoPay.MaxPerHourMinor, spent)
	}
	s := spending{at: c.now(), amount: amount}
	c.spent = append(c.spent, s)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, have := range c.spent {
			if have == s {
				c.spent = append(c.spent[:i], c.spent[i+1:]...)
				return
			}
		}
	}, ""
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
	paymentSignature, paid, err := c.pay(ctx, raw.PaymentRequired, pre.AmountMinor)
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
// sign (moving at most amount from the wallet), submit. It returns the
// PaymentSignature to repeat the request with, and whether the payment
// may have been made (it was submitted).
func (c *Client) pay(ctx context.Context, paymentRequired json.RawMessage, amount int64) (paymentSignature string, submitted bool, err error) {
	body, _ := json.Marshal(map[string]json.RawMessage{"paymentRequired": paymentRequired})
	p, err := c.API.PostPaymentsPrepareWithBodyWithResponse(ctx, nil, "application/json", bytes.NewReader(body))
	if err != nil {
		return "", false, err
	}
	if p.JSON200 == nil {
		return "", false, fmt.Errorf("prepare answered %d", p.StatusCode())
	}
	signed, err := c.signPrepared(p.JSON200.Transaction, amount)
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
