package wager_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gagliardetto/solana-go"

	wager "wager/sdk"
)

// Sign in with a wallet, find a live game and follow it to its end.
func Example() {
	ctx := context.Background()
	key := solana.NewWallet().PrivateKey // your wallet's key
	c, err := wager.New("http://localhost:8080", wager.WithWallet(key), wager.WithAppID("my-app"),
		wager.WithAutoPay(10_000, 100_000)) // pay 402s: 0.01 USDC a request, 0.1 USDC an hour at most
	if err != nil {
		log.Fatal(err)
	}
	live, err := c.API.GetGamesLiveWithResponse(ctx, nil) // signs in first
	if err != nil || len(*live.JSON200) == 0 {
		log.Fatal("no live game: ", err)
	}
	f, err := c.FollowGame(ctx, (*live.JSON200)[0].GameId)
	if err != nil {
		log.Fatal(err)
	}
	for ev := range f.Events { // closes after game:completed
		fmt.Println(ev.Seq, ev.Name, string(ev.Data))
	}
}
