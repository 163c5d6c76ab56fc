package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/e2e/apiclient"
)

// SignInResult is how signing in the run's wallets went.
type SignInResult struct {
	Wallets        int     `json:"wallets"`
	Seconds        float64 `json:"seconds"`
	WalletsPerSec  float64 `json:"walletsPerSecond"`
	HandshakeLogin Latency `json:"handshakeLogin" doc:"handshake plus login, per wallet"`
}

// newClient returns an anonymous API client with a fresh keypair.
func (r *runner) newClient() (*apiclient.Client, error) {
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		return nil, fmt.Errorf("generating a keypair: %w", err)
	}
	c := apiclient.New(r.cfg.URL, key)
	c.AppID = r.cfg.AppID
	c.HTTP = r.http
	return c, nil
}

// signIn creates n wallets and signs each in (handshake, signature,
// login), at most -setup-concurrency at a time, once per run. Any
// failure is a setup failure.
func (r *runner) signIn(ctx context.Context, n int) ([]*apiclient.Client, error) {
	clients := make([]*apiclient.Client, n)
	var lat Recorder
	start := time.Now()
	r.progress("signing in %d wallets", n)
	err := forEach(ctx, n, r.cfg.SetupConcurrency, func(ctx context.Context, i int) error {
		c, err := r.newClient()
		if err != nil {
			return err
		}
		t := time.Now()
		if err := c.Login(ctx); err != nil {
			var ae *apiclient.Error
			if errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests {
				return fmt.Errorf("signing in wallet %d: %w (the server limits handshakes per IP: run it with AUTH_RATE_LIMIT=0)", i, err)
			}
			return fmt.Errorf("signing in wallet %d: %w", i, err)
		}
		lat.Add(time.Since(t))
		clients[i] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	r.report.SignIn = SignInResult{Wallets: n, Seconds: secs, WalletsPerSec: float64(n) / secs, HandshakeLogin: lat.Summary()}
	r.progress("signed in %d wallets in %.1fs", n, secs)
	return clients, nil
}
