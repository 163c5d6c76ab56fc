// Package apiclient is a small client of the platform's JSON API for tests,
// benchmarks and load tools: it signs in with a Solana keypair, calls
// endpoints, and signs prepared transactions like a wallet would.
package apiclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gagliardetto/solana-go"
)

// SDKVersion is the X-SDK-Version the client sends.
const SDKVersion = "1.0.0"

// Client is one signed-in (or anonymous) API caller.
type Client struct {
	BaseURL string
	AppID   string
	Key     solana.PrivateKey
	Token   string
	UserID  string
	HTTP    *http.Client
}

// Error is an API error answer.
type Error struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// New returns an anonymous client of the API at baseURL.
func New(baseURL string, key solana.PrivateKey) *Client {
	return &Client{BaseURL: baseURL, AppID: "test-agent", Key: key, HTTP: http.DefaultClient}
}

// Do calls method path with body (nil for none) and decodes the answer
// into out (nil to ignore it). A non-2xx answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-SDK-Version", SDKVersion)
	req.Header.Set("X-App-Id", c.AppID)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		e := &Error{Status: resp.StatusCode}
		json.Unmarshal(data, e)
		return e
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Login signs in with the client's keypair (handshake, sign, login).
func (c *Client) Login(ctx context.Context) error {
	var hs struct{ Message string }
	if err := c.Do(ctx, http.MethodPost, "/auth/handshake", map[string]string{"walletAddress": c.Key.PublicKey().String()}, &hs); err != nil {
		return err
	}
	sig, err := c.Key.Sign([]byte(hs.Message))
	if err != nil {
		return err
	}
	var out struct {
		AccessToken string `json:"access_token"`
		User        struct{ ID string }
	}
	if err := c.Do(ctx, http.MethodPost, "/auth/login-wallet", map[string]string{
		"address": c.Key.PublicKey().String(), "signedMessage": base64.StdEncoding.EncodeToString(sig[:])}, &out); err != nil {
		return err
	}
	c.Token, c.UserID = out.AccessToken, out.User.ID
	return nil
}

// Prepared is the answer of a prepare endpoint.
type Prepared struct {
	IntentID    string    `json:"intentId"`
	Transaction string    `json:"transaction"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// Sign adds the client's signature to a prepared transaction and returns
// it base64-encoded, ready to submit.
func (c *Client) Sign(p Prepared) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(p.Transaction)
	if err != nil {
		return "", err
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		return "", err
	}
	if _, err := tx.PartialSign(func(pk solana.PublicKey) *solana.PrivateKey {
		if pk.Equals(c.Key.PublicKey()) {
			return &c.Key
		}
		return nil
	}); err != nil {
		return "", err
	}
	out, err := tx.MarshalBinary()
	return base64.StdEncoding.EncodeToString(out), err
}

// PrepareSignSubmit runs one prepare/submit round trip: POST prepare with
// body, sign, POST submit, and decodes the submit answer into out.
func (c *Client) PrepareSignSubmit(ctx context.Context, preparePath, submitPath string, body, out any) error {
	var p Prepared
	if err := c.Do(ctx, http.MethodPost, preparePath, body, &p); err != nil {
		return err
	}
	signed, err := c.Sign(p)
	if err != nil {
		return err
	}
	return c.Do(ctx, http.MethodPost, submitPath, map[string]string{"intentId": p.IntentID, "signedTransaction": signed}, out)
}

// Balance is GET /wallets/me/balance. OnChain is nil when the server
// could not read the chain in time.
type Balance struct {
	AvailableMinor int64  `json:"availableMinor"`
	LockedMinor    int64  `json:"lockedMinor"`
	DepositAddress string `json:"depositAddress"`
	OnChain        *struct {
		USDCMinor int64 `json:"usdcMinor"`
	} `json:"onChain"`
}

// Balance returns the caller's balances.
func (c *Client) Balance(ctx context.Context) (Balance, error) {
	var b Balance
	err := c.Do(ctx, http.MethodGet, "/wallets/me/balance", nil, &b)
	return b, err
}

// Deposit moves amount USDC minor units from the wallet to the platform.
func (c *Client) Deposit(ctx context.Context, amount int64) error {
	b, err := c.Balance(ctx)
	if err != nil {
		return err
	}
	return c.PrepareSignSubmit(ctx, "/wallets/transfer/prepare", "/wallets/transfer/submit",
		map[string]any{"toAddress": b.DepositAddress, "amountMinor": amount}, nil)
}
