package bots

import "math/rand/v2"

// ConnectFourColumn chooses where a bot drops its piece on a Connect Four
// board (rows top to bottom, each cell the user id of its piece or empty):
// a column that wins at once, else one that stops the other player from
// winning at once, else a random open column, the middle ones more likely.
// It returns -1 when every column is full.
func ConnectFourColumn(board [][]string, me string) int {
	var open []int
	for c := range board[0] {
		if board[0][c] == "" {
			open = append(open, c)
		}
	}
	if len(open) == 0 {
		return -1
	}
	other := ""
	for _, row := range board {
		for _, cell := range row {
			if cell != "" && cell != me {
				other = cell
			}
		}
	}
	for _, who := range []string{me, other} {
		if who == "" {
			continue
		}
		for _, c := range open {
			if wins(board, c, who) {
				return c
			}
		}
	}
	// Weighted towards the middle: column 3 of 7 four times as likely as
	// the edges.
	weights, total := make([]int, len(open)), 0
	for i, c := range open {
		weights[i] = 4 - abs(c-len(board[0])/2)
		total += weights[i]
	}
	n := rand.IntN(total)
	for i, w := range weights {
		if n < w {
			return open[i]
		}
		n -= w
	}
	return open[len(open)-1]
}

// wins reports whether who's piece dropped in column c makes four in a
// row.
func wins(board [][]string, c int, who string) bool {
	r := -1
	for row := len(board) - 1; row >= 0; row-- {
		if board[row][c] == "" {
			r = row
			break
		}
	}
	if r < 0 {
		return false
	}
	at := func(row, col int) bool {
		if row == r && col == c {
			return true
		}
		return row >= 0 && row < len(board) && col >= 0 && col < len(board[0]) && board[row][col] == who
	}
	for _, d := range [][2]int{{0, 1}, {1, 0}, {1, 1}, {1, -1}} {
		n := 1
		for _, sign := range []int{1, -1} {
			for k := 1; at(r+sign*k*d[0], c+sign*k*d[1]); k++ {
				n++
			}
		}
		if n >= 4 {
			return true
		}
	}
	return false
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
