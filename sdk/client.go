// Package wager is the Go client of the platform's JSON API.
//
// Client.API is the typed client generated from the API's OpenAPI document
// (package wager.example.com/sdk/api): one method per operation. The Client around it
// signs in with a Solana wallet and keeps the token fresh, sends the app
// id and the SDK version with every request, turns error answers into
// *APIError (426 into *UpgradeRequiredError, 402 into
// *PaymentRequiredError), pays 402 challenges by itself within the caps
// it was given, signs prepared transactions, and follows games live.
//
//	c, err := wager.New("http://localhost:8080", wager.WithWallet(key))
//	games, err := c.API.GetGamesLiveWithResponse(ctx, nil)
package wager

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gorilla/websocket"

	"wager.example.com/sdk/api"
)

// Version is this SDK's version, sent as X-SDK-Version with every request.
const Version = "1.0.0"

// DefaultAppID is the X-App-Id sent when no WithAppID option is given.
const DefaultAppID = "wager-go-sdk"

// RenewBefore is how long before its expiry the client replaces its access
// token by signing in again.
const RenewBefore = 10 * time.Minute

// Client calls the API at one base URL for one app, signed in with one
// wallet (or anonymously without one). It is safe for concurrent use.
type Client struct {
	// API has one method per operation of the API. Through this Client,
	// an answer of status 400 or more is an error (*APIError and the
	// types that unwrap to it), never a response.
	API *api.ClientWithResponses

	baseURL string
	appID   string
	wallet  solana.PrivateKey
	http    *http.Client
	dialer  *websocket.Dialer
	now     func() time.Time
	autoPay *SpendingCap // automatic payments; nil: none

	mu       sync.Mutex // guards the fields below
	token    string
	expires  time.Time
	userID   string
	username string
	known    platform // the platform's addresses, once read

	signInMu sync.Mutex // one sign-in at a time
	optErr   error      // an option's refusal, returned by New
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with h
// (http.DefaultClient otherwise).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithAppID sets the X-App-Id sent with every request: the app the access
// token is issued to.
func WithAppID(id string) Option { return func(c *Client) { c.appID = id } }

// WithWallet makes the client sign in with the wallet's key (on first need,
// and again before the token expires or after a 401) and sign prepared
// transactions with it.
func WithWallet(key solana.PrivateKey) Option { return func(c *Client) { c.wallet = key } }

// WithWalletKey is WithWallet with the key as base58 text (as NewWalletKey
// makes it and wallets such as Phantom export it): a bot needs no Solana
// library of its own. New fails when it is not a base58 ed25519 secret
// key whose public half is its seed's.
func WithWalletKey(secret string) Option {
	return func(c *Client) {
		key, err := solana.PrivateKeyFromBase58(strings.TrimSpace(secret))
		if err == nil && (len(key) != ed25519.PrivateKeySize ||
			!ed25519.NewKeyFromSeed(key[:ed25519.SeedSize]).Equal(ed25519.PrivateKey(key))) {
			err = fmt.Errorf("%d bytes, not a seed and its public key", len(key))
		}
		if err != nil {
			c.optErr = fmt.Errorf("wager: the wallet key is not a base58 ed25519 secret key: %w", err)
			return
		}
		c.wallet = key
	}
}

// NewWalletKey makes a new wallet's secret key, as base58 text. Keep it
// to sign in as the same user again: the platform knows a user by the
// wallet.
func NewWalletKey() string { return solana.NewWallet().PrivateKey.String() }

// WithToken makes the client use an access token it got elsewhere. Without
// a wallet it cannot renew it.
func WithToken(token string) Option {
	return func(c *Client) { c.token, c.expires = token, tokenExpiry(token) }
}

// WithClock replaces the clock the client reads to decide when its token
// needs renewing and what it spent in the last hour.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithWebSocketDialer makes FollowGame open its sockets with d
// (websocket.DefaultDialer otherwise).
func WithWebSocketDialer(d *websocket.Dialer) Option { return func(c *Client) { c.dialer = d } }

// New returns a client of the API at baseURL (e.g. "https://example.com",
// without a trailing slash). It returns an error when baseURL is not an
// absolute http(s) URL.
func New(baseURL string, opts ...Option) (*Client, error) {
	baseURL = strings.TrimRight(baseURL, "/")
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, fmt.Errorf("wager: base URL %q is not an http(s) URL", baseURL)
	}
	c := &Client{baseURL: baseURL, appID: DefaultAppID, http: http.DefaultClient, dialer: websocket.DefaultDialer, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	if c.optErr != nil {
		return nil, c.optErr
	}
	gen, err := api.NewClientWithResponses(baseURL, api.WithHTTPClient(doer{c}))
	if err != nil {
		return nil, fmt.Errorf("wager: %w", err)
	}
	c.API = gen
	return c, nil
}

// Wallet returns the wallet's address (the zero key without a wallet).
func (c *Client) Wallet() solana.PublicKey {
	if c.wallet == nil {
		return solana.PublicKey{}
	}
	return c.wallet.PublicKey()
}

// UserID returns the signed-in user's id ("" before the first sign-in).
func (c *Client) UserID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.userID
}

// Token returns the current access token and when it expires ("" before
// the first sign-in).
func (c *Client) Token() (string, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token, c.expires
}

// SignIn signs in with the wallet now (handshake, ed25519 signature of the
// message, login) and keeps the new token. It returns an error without a
// wallet, or the API's error (*APIError) when a step is refused.
func (c *Client) SignIn(ctx context.Context) error {
	c.mu.Lock()
	stale := c.token
	c.mu.Unlock()
	_, err := c.renew(ctx, stale)
	return err
}

// validToken returns a token that is good for at least RenewBefore,
// signing in when there is none or it is about to expire. Without a
// wallet it returns the token it has ("" for anonymous calls).
func (c *Client) validToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	token, expires := c.token, c.expires
	c.mu.Unlock()
	if c.wallet == nil || (token != "" && expires.Sub(c.now()) > RenewBefore) {
		return token, nil
	}
	return c.renew(ctx, token)
}

// renew signs in again unless another call already replaced the stale
// token by a valid one meanwhile.
func (c *Client) renew(ctx context.Context, stale string) (string, error) {
	if c.wallet == nil {
		return "", errors.New("wager: signing in needs a wallet (WithWallet)")
	}
	c.signInMu.Lock()
	defer c.signInMu.Unlock()
	c.mu.Lock()
	token, expires := c.token, c.expires
	c.mu.Unlock()
	if token != "" && token != stale && expires.Sub(c.now()) > RenewBefore {
		return token, nil
	}

	ctx = context.WithValue(ctx, noAuthKey{}, true)
	address := c.wallet.PublicKey().String()
	hs, err := c.API.PostAuthHandshakeWithResponse(ctx, &api.PostAuthHandshakeParams{XAppId: c.appID},
		api.HandshakeRequest{WalletAddress: address})
	if err != nil {
		return "", fmt.Errorf("wager: sign-in handshake: %w", err)
	}
	if hs.JSON200 == nil {
		return "", fmt.Errorf("wager: sign-in handshake answered %d", hs.StatusCode())
	}
	sig, err := c.wallet.Sign([]byte(hs.JSON200.Message))
	if err != nil {
		return "", fmt.Errorf("wager: signing the sign-in message: %w", err)
	}
	nonce := hs.JSON200.Nonce
	login, err := c.API.PostAuthLoginWalletWithResponse(ctx, &api.PostAuthLoginWalletParams{XAppId: c.appID}, api.LoginRequest{
		Address: address, SignedMessage: base64.StdEncoding.EncodeToString(sig[:]), Nonce: &nonce})
	if err != nil {
		return "", fmt.Errorf("wager: sign-in: %w", err)
	}
	if login.JSON200 == nil {
		return "", fmt.Errorf("wager: sign-in answered %d", login.StatusCode())
	}
	out := login.JSON200
	c.mu.Lock()
	c.token, c.userID, c.username = out.AccessToken, out.User.Id, out.User.Username
	c.expires = tokenExpiry(out.AccessToken)
	if c.expires.IsZero() {
		c.expires = c.now().Add(time.Duration(out.ExpiresIn) * time.Second)
	}
	c.mu.Unlock()
	return out.AccessToken, nil
}

// tokenExpiry reads a JWT's exp claim (without checking the token: only
// the server can); zero when it has none.
func tokenExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}

// Context keys of requests the client makes for itself.
type (
	noAuthKey struct{} // a sign-in request: no token
	noPayKey  struct{} // a payment request: never paid automatically
)

// doer sends the generated client's requests: headers, token, renewal
// after a 401, automatic payment of a 402, error answers as errors.
type doer struct{ c *Client }

func (d doer) Do(req *http.Request) (*http.Response, error) {
	c := d.c
	ctx := req.Context()
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body) // kept to send the request again
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	auth := ctx.Value(noAuthKey{}) == nil
	token := ""
	if auth {
		var err error
		if token, err = c.validToken(ctx); err != nil {
			return nil, err
		}
	}
	resp, err := c.send(req, body, token, "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized && auth && token != "" && c.wallet != nil {
		drain(resp)
		if token, err = c.renew(ctx, token); err != nil {
			return nil, err
		}
		if resp, err = c.send(req, body, token, ""); err != nil {
			return nil, err
		}
	}
	if resp.StatusCode == http.StatusPaymentRequired && ctx.Value(noPayKey{}) == nil {
		return c.payAndRepeat(req, body, token, resp)
	}
	return checked(resp)
}

// send sends req once with body, the client's headers, token (none when
// empty) and, when set, a PAYMENT-SIGNATURE.
func (c *Client) send(req *http.Request, body []byte, token, payment string) (*http.Response, error) {
	r := req.Clone(req.Context())
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	r.Header.Set("X-SDK-Version", Version)
	r.Header.Set("X-App-Id", c.appID)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if payment != "" {
		r.Header.Set("PAYMENT-SIGNATURE", payment)
	}
	return c.http.Do(r)
}

// checked returns resp when it succeeded, else its error.
func checked(resp *http.Response) (*http.Response, error) {
	if resp.StatusCode < 400 {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("wager: reading the %d answer: %w", resp.StatusCode, err)
	}
	return nil, apiError(resp, body)
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}
