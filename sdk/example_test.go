package wager_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
)

// Sign in with a wallet, find a live game and follow it to its end.
func Example() {
	ctx := context.Background()
	key := wager.NewWalletKey() // your wallet's key, base58; keep it to sign in as the same user
	c, err := wager.New("http://localhost:8080", wager.WithWalletKey(key), wager.WithAppID("my-app"),
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

// A bot that plays one free game of rock, paper, scissors: it is told of
// its match, follows the game before it moves (the first event, joined,
// is the game as it stands), plays rock every round, and says whether it
// won. examples/rpsbot is such a bot as a program.
func Example_bot() {
	ctx := context.Background()
	c, err := wager.New("http://localhost:8080", wager.WithWalletKey(wager.NewWalletKey()), wager.WithAppID("rock-bot"))
	if err != nil {
		log.Fatal(err)
	}
	gameID, err := c.FindOrCreateGame(ctx, "rps", 0, map[string]any{"rounds": 3})
	if err != nil {
		log.Fatal(err)
	}
	f, err := c.FollowGame(ctx, gameID)
	if err != nil {
		log.Fatal(err)
	}
	rock := func() {
		_, err := c.Move(ctx, gameID, "rock")
		var ae *wager.APIError
		if err != nil && !(errors.As(err, &ae) && ae.Code == "ALREADY_MOVED") {
			log.Fatal(err)
		}
	}
	for ev := range f.Events {
		switch p, _ := ev.Payload(); p := p.(type) {
		case *api.RulesRPSRoundStart:
			rock()
		case *api.GameCompleted:
			won := p.WinnerId != nil && *p.WinnerId == c.UserID()
			fmt.Println("won:", won, "payout:", p.PayoutMinor)
		default:
			if ev.Name == wager.EventJoined {
				rock()
			}
		}
	}
	if err := f.Err(); err != nil {
		log.Fatal(err)
	}
}

// A bot that plays an arena to its end: it joins the first one listed
// (paying its entry fee from the platform balance), plays rock, paper or
// scissors at random in every game it is paired in, and says where it
// finished.
func Example_arena() {
	ctx := context.Background()
	c, err := wager.New("http://localhost:8080", wager.WithWalletKey(wager.NewWalletKey()), wager.WithAppID("arena-bot"))
	if err != nil {
		log.Fatal(err)
	}
	arenas, err := c.Tournaments(ctx, "") // scheduled and running ones, soonest first
	if err != nil || len(arenas) == 0 {
		log.Fatal("no arena: ", err)
	}
	t, err := playArena(ctx, c, arenas[0].Id)
	if err != nil {
		log.Fatal(err) // *wager.TournamentClosedError, *wager.InsufficientFundsError, ...
	}
	for _, s := range t.Standings {
		if s.UserId == c.UserID() {
			fmt.Printf("%s: rank %d of %d, %d points in %d games\n", t.Status, s.Rank, len(t.Standings), s.Score, s.Games)
		}
	}
	for _, p := range t.Prizes {
		fmt.Println(p.Username, "won", p.AmountMinor)
	}
}

// playArena plays the rock, paper, scissors arena id to its end and
// returns it as it ended.
func playArena(ctx context.Context, c *wager.Client, id string) (*api.TournamentDetail, error) {
	return c.PlayArena(ctx, id, playRPS(c))
}

// playRPS plays a game of rock, paper, scissors to its end, a move at
// random in each round.
func playRPS(c *wager.Client) wager.GamePlayer {
	moves := []string{"rock", "paper", "scissors"}
	return func(ctx context.Context, gameID string) error {
		f, err := c.FollowGame(ctx, gameID)
		var ae *wager.APIError
		if errors.As(err, &ae) && ae.Code == "GAME_NOT_ACTIVE" {
			return nil // over already
		}
		if err != nil {
			return err
		}
		for ev := range f.Events { // closes after game:completed
			if ev.Name == wager.EventJoined || ev.Name == "game:rps:round:start" {
				c.Move(ctx, gameID, moves[rand.IntN(len(moves))]) // a second move in a round is refused: no harm
			}
		}
		return f.Err()
	}
}
