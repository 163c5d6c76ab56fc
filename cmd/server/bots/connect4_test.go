package bots

import (
	"math/rand/v2"
	"testing"
)

// TestTheConnectFourBotTakesAWinAndBlocksALoss checks, over random boards,
// that the bot's column is open, wins when a win is there, and otherwise
// stops the other player's immediate win.
func TestTheConnectFourBotTakesAWinAndBlocksALoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	won, blocked := 0, 0
	for game := range 3000 {
		board := make([][]string, 6)
		for r := range board {
			board[r] = make([]string, 7)
		}
		players := [2]string{"me", "you"}
		for move := range rng.IntN(40) {
			c := rng.IntN(7)
			for r := 5; r >= 0; r-- {
				if board[r][c] == "" {
					board[r][c] = players[move%2]
					break
				}
			}
		}
		c := ConnectFourColumn(board, "me")
		if c < 0 {
			continue
		}
		if board[0][c] != "" {
			t.Fatalf("game %d: the bot chose full column %d", game, c)
		}
		canWin, mustBlock := false, false
		for col := range 7 {
			canWin = canWin || wins(board, col, "me")
			mustBlock = mustBlock || wins(board, col, "you")
		}
		switch {
		case canWin:
			won++
			if !wins(board, c, "me") {
				t.Fatalf("game %d: a win was open, the bot chose column %d", game, c)
			}
		case mustBlock:
			blocked++
			if !wins(board, c, "you") {
				t.Fatalf("game %d: the other player wins next, the bot did not block (column %d)", game, c)
			}
		}
	}
	if won == 0 || blocked == 0 {
		t.Fatalf("the random boards held %d wins and %d blocks to check", won, blocked)
	}
}
