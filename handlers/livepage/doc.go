// Package livepage is the live page projection: what the game and arena
// pages show, and the HTML fragments that the live hub (web/live) sends
// them from their rooms' events. Games reads a game as everyone may see
// it, for the game page (GameView) and for a room's pages, whose copy it
// keeps up to date from the room's events alone (live_state.go); it also
// answers a game room's join and renders spectator counts and personal
// notices. Tournaments renders the arena pages' fragments from each
// tournament event alone. The presenters they call, which turn domain
// values into view models (a game's result, its bets and market, chat
// lines, notifications, feed entries, an arena's standings), are shared
// with the pages of package handlers, which imports this one.
package livepage
