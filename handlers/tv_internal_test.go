package handlers

import (
	"testing"

	"wager/domain/game"
)

// TV shows the most watched game: a staked game two people watch before
// the arena leader's game nobody watches; among games watched alike, the
// arena leader's, then the biggest pot, then the newest.
func TestTVShowsTheMostWatchedGame(t *testing.T) {
	live := func(games ...game.LiveGame) []game.LiveGame { return games }
	g := func(id string, watchers int, pot int64) game.LiveGame {
		return game.LiveGame{GameID: id, SpectatorCount: watchers, PotMinor: pot}
	}
	for _, tc := range []struct {
		name string
		live []game.LiveGame
		top  string
		want string
	}{
		{"nothing live", nil, "", ""},
		{"watched before the arena", live(g("staked", 2, 2_000_000), g("bot", 0, 0), g("arena", 0, 0)), "arena", "staked"},
		{"the arena among the unwatched", live(g("bot", 0, 0), g("staked", 0, 1_000_000), g("arena", 0, 0)), "arena", "arena"},
		{"the pot among the unwatched", live(g("bot", 0, 0), g("small", 0, 10_000), g("big", 0, 1_000_000)), "", "big"},
		{"the newest among equals", live(g("newest", 1, 0), g("older", 1, 0)), "", "newest"},
	} {
		if got := tvPick(tc.live, tc.top); got != tc.want {
			t.Errorf("%s: TV shows %q, want %q", tc.name, got, tc.want)
		}
	}
}
