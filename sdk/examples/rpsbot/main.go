// Command rpsbot is a whole bot written against the SDK alone: it signs
// in with a wallet (WAGER_WALLET_KEY, base58, or a new one it prints),
// waits for another player to take a free game of rock, paper, scissors,
// follows the game before it moves, chooses at random in every round and
// says how the game ended.
//
//	go run ./examples/rpsbot -url http://localhost:8080
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
)

func main() {
	url := flag.String("url", "http://localhost:8080", "the platform's address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *url); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url string) error {
	key := os.Getenv("WAGER_WALLET_KEY")
	if key == "" {
		key = wager.NewWalletKey()
		// The key is the wallet: to the terminal only, never to a log.
		fmt.Fprintln(os.Stderr, "a new wallet; to play as the same user again: WAGER_WALLET_KEY="+key)
	}
	c, err := wager.New(url, wager.WithWalletKey(key), wager.WithAppID("rpsbot"))
	if err != nil {
		return err
	}
	// A program plays from a bot account: people see it, and arenas for
	// people keep it out. Declaring again changes nothing.
	if _, err := c.DeclareBot(ctx); err != nil { // signs in first
		return fmt.Errorf("declaring the account a bot: %w", err)
	}
	gameID, err := c.FindOrCreateGame(ctx, "rps", 0, map[string]any{"rounds": 3})
	if err != nil {
		return fmt.Errorf("finding a game: %w", err)
	}
	fmt.Println("playing game", gameID, "as", c.UserID())
	// Follow first, then move: the room's first event (joined) is the
	// game as it stands, so no round starts unseen.
	f, err := c.FollowGame(ctx, gameID)
	if err != nil {
		return fmt.Errorf("following game %s: %w", gameID, err)
	}
	for ev := range f.Events { // closes after game:completed
		p, _ := ev.Payload() // nil for an event newer than this SDK: not one the bot acts on
		switch p := p.(type) {
		case *api.RulesRPSRoundStart:
			err = play(ctx, c, gameID)
		case *api.GameCompleted:
			fmt.Printf("game over: %s, won by me: %v, payout %d\n", p.Reason, p.WinnerId != nil && *p.WinnerId == c.UserID(), p.PayoutMinor)
		default:
			if ev.Name == wager.EventJoined {
				err = play(ctx, c, gameID) // the round in progress when we joined
			}
		}
		if err != nil {
			return err
		}
	}
	return f.Err()
}

// play chooses in the current round. A round already chosen in, a
// round whose time ran out (INVALID_MOVE) or a game that ended meanwhile
// is not an error: the events say what happens next.
func play(ctx context.Context, c *wager.Client, gameID string) error {
	choices := []string{"rock", "paper", "scissors"}
	_, err := c.Move(ctx, gameID, choices[rand.IntN(len(choices))])
	var ae *wager.APIError
	if errors.As(err, &ae) && (ae.Code == "ALREADY_MOVED" || ae.Code == "INVALID_MOVE" || ae.Code == "GAME_NOT_ACTIVE") {
		log.Printf("move refused: %s", ae.Message)
		return nil
	}
	if err != nil {
		return fmt.Errorf("moving in game %s: %w", gameID, err)
	}
	return nil
}
