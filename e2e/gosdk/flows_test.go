package wager_test

import (
	"errors"
	"net/http"
	"testing"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
)

func TestPreparedTransactionFlows(t *testing.T) {
	s := startServer(t, nil)
	first, _, game := s.match(t, 3)
	fan := s.newClient(t)
	fund(t, fan, 1_000_000)
	ctx := t.Context()

	dep, err := fan.Deposit(ctx, 100_000)
	if err != nil || dep.Signature == "" || dep.AmountMinor != 100_000 {
		t.Fatalf("Deposit: %+v %v", dep, err)
	}
	bal, err := fan.API.GetWalletsMeBalanceWithResponse(ctx, nil)
	if err != nil || bal.JSON200.AvailableMinor != 100_000 {
		t.Fatalf("platform balance after the deposit: %+v %v, want 100000 available", bal.JSON200, err)
	}

	bet, err := fan.Bet(ctx, game, first.UserID(), 20_000)
	if err != nil || bet.Signature == "" || bet.OnUserId != first.UserID() || bet.Refunded {
		t.Fatalf("Bet: %+v %v", bet, err)
	}
	don, err := fan.Donate(ctx, game, 30_000)
	if err != nil || don.Signature == "" || don.AmountMinor != 30_000 || don.Refunded {
		t.Fatalf("Donate: %+v %v", don, err)
	}
	tip, err := fan.Tip(ctx, first.UserID(), 10_000, &api.TipsContext{Type: "game", Id: game})
	if err != nil || tip.Signature == "" || tip.Message == nil {
		t.Fatalf("Tip: %+v %v", tip, err)
	}
	pot, err := fan.API.GetGamesByIdPotWithResponse(ctx, game, nil)
	if err != nil || pot.JSON200.SpectatorPotMinor != 30_000 {
		t.Fatalf("pot after the donation: %+v %v", pot.JSON200, err)
	}

	// A refusal is the API's error; a player may not bet on their game.
	_, err = first.Bet(ctx, game, first.UserID(), 20_000)
	var ae *wager.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Fatalf("a player's bet: %v, want a 403 *APIError", err)
	}
	// Without a wallet nothing is signed.
	anon, _ := wager.New(s.URL)
	if _, err := anon.SignTransaction("AA=="); err == nil {
		t.Fatal("SignTransaction without a wallet: no error")
	}
}
