package game

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game/rules"
)

// Rematch is the state of a finished game's rematch.
type Rematch struct {
	GameID      string   `json:"gameId"`
	RequestedBy []string `json:"requestedBy" doc:"players who asked for a rematch"`
	Status      string   `json:"status" enum:"none,requested,started" doc:"none, requested or started"`
	NewGameID   *string  `json:"newGameId"`
}

// RematchBy is the data of game:rematch:requested and
// game:rematch:cancelled: the player who asked or withdrew.
type RematchBy struct {
	UserID string `json:"userId"`
}

// RematchStarted is the data of game:rematch:started.
type RematchStarted struct {
	NewGameID string `json:"newGameId"`
}

// RematchLobby is the data of game:rematch:lobby.
type RematchLobby struct {
	UserID  string `json:"userId"`
	LobbyID string `json:"lobbyId"`
}

// RematchNotice is the rematch:requested notice to the other player.
type RematchNotice struct {
	GameID string `json:"gameId"`
	UserID string `json:"userId"`
}

// RematchLobbyNotice is the rematch:lobby notice to the other player.
type RematchLobbyNotice struct {
	GameID  string `json:"gameId"`
	LobbyID string `json:"lobbyId"`
}

// RematchOf returns the rematch state of a game.
func (s *Service) RematchOf(ctx context.Context, gameID string) (Rematch, error) {
	g, err := s.Game(ctx, gameID)
	if err != nil {
		return Rematch{}, err
	}
	return s.rematchState(ctx, s.db, g.ID)
}

func (s *Service) rematchState(ctx context.Context, idb bun.IDB, gameID string) (Rematch, error) {
	r := Rematch{GameID: gameID, RequestedBy: []string{}, Status: "none"}
	if err := idb.NewSelect().Table("rematches").Column("user_id").Where("game_id = ?", gameID).
		Order("requested_at").Scan(ctx, &r.RequestedBy); err != nil {
		return r, fmt.Errorf("read the rematch requests of game %s: %w", gameID, err)
	}
	var next []string
	if err := idb.NewSelect().Table("games").Column("id").Where("rematch_of = ?", gameID).Scan(ctx, &next); err != nil {
		return r, fmt.Errorf("read the rematch of game %s: %w", gameID, err)
	}
	switch {
	case len(next) > 0:
		r.Status, r.NewGameID = "started", &next[0]
	case len(r.RequestedBy) > 0:
		r.Status = "requested"
	}
	return r, nil
}

// RequestRematch asks for (or, when the other player asked first, accepts)
// a rematch of a finished game: when both players asked, a new game with
// the same settings and stakes starts. Errors: NOT_FOUND, NOT_A_PLAYER,
// CONFLICT (the game is not over, a rematch already started, or player
// protection refuses the other player the stake), INSUFFICIENT_FUNDS,
// player protection's refusals of the asking player's stake.
func (s *Service) RequestRematch(ctx context.Context, userID, gameID string) (Rematch, error) {
	var out Rematch
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		g, err := s.finishedGameOfPlayer(ctx, tx, userID, gameID)
		if err != nil {
			return err
		}
		if g.TournamentID != nil {
			return errTournamentRematch
		}
		players := g.Players
		st, err := s.rematchState(ctx, tx, g.ID)
		if err != nil {
			return err
		}
		if st.Status == "started" {
			return domain.Errorf(domain.CodeConflict, "the rematch has started").With("newGameId", *st.NewGameID)
		}
		if slices.Contains(st.RequestedBy, userID) {
			out = st
			return nil
		}
		var others []presence
		for _, p := range players {
			if p != userID {
				others = append(others, presence{UserID: p})
			}
		}
		refused, err := s.stakeRefusals(ctx, tx, userID, others, g.StakeMinor)
		if err != nil {
			return err
		}
		if e := refused[userID]; e != nil {
			return e
		}
		now := s.now()
		if _, err := tx.ExecContext(ctx, "INSERT INTO rematches (game_id, user_id, requested_at) VALUES (?, ?, ?)",
			g.ID, userID, now); err != nil {
			return err
		}
		events := []rules.Event{{Name: domain.EventRematchRequested, Data: RematchBy{UserID: userID}}}
		if len(st.RequestedBy)+1 == len(players) {
			for _, p := range players {
				if err := s.checkFree(ctx, tx, p, nil); err != nil {
					return err
				}
			}
			for _, p := range others {
				if refused[p.UserID] != nil {
					return otherRefused("other player")
				}
			}
			// The one accepting learns how much they are short (startGame
			// refuses the other player without telling their balance).
			if available, ok, err := covers(ctx, tx, userID, g.StakeMinor); err != nil {
				return err
			} else if !ok {
				return stakeNotCovered(g.StakeMinor, available)
			}
			reversed := []string{players[1], players[0]} // the other player starts
			ng, err := s.startGame(ctx, tx, newGame{lobbyID: g.LobbyID, rematchOf: &g.ID, gameType: g.GameType,
				stake: g.StakeMinor, settings: g.Settings, players: reversed})
			if err != nil {
				return err
			}
			events = append(events, rules.Event{Name: domain.EventRematchStarted, Data: RematchStarted{NewGameID: ng.ID}})
		} else {
			for _, p := range players {
				if p != userID {
					if err := s.events.Tell(tx, p, domain.NoticeRematchRequested, RematchNotice{GameID: g.ID, UserID: userID}); err != nil {
						return err
					}
				}
			}
		}
		if err := s.append(ctx, tx, &g, now, columns{}, false, events...); err != nil {
			return err
		}
		out, err = s.rematchState(ctx, tx, g.ID)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("ask for a rematch of game %s: %w", gameID, err)
	}
	return out, nil
}

// CancelRematch withdraws the user's rematch request.
func (s *Service) CancelRematch(ctx context.Context, userID, gameID string) (Rematch, error) {
	var out Rematch
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		g, err := s.finishedGameOfPlayer(ctx, tx, userID, gameID)
		if err != nil {
			return err
		}
		if st, err := s.rematchState(ctx, tx, g.ID); err != nil {
			return err
		} else if st.Status == "started" {
			return domain.Errorf(domain.CodeConflict, "the rematch has started").With("newGameId", *st.NewGameID)
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM rematches WHERE game_id = ? AND user_id = ?", g.ID, userID)
		if err != nil {
			return fmt.Errorf("withdraw a rematch request of game %s: %w", g.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			if err := s.append(ctx, tx, &g, s.now(), columns{}, false, rules.Event{Name: domain.EventRematchCancelled, Data: RematchBy{UserID: userID}}); err != nil {
				return err
			}
		}
		out, err = s.rematchState(ctx, tx, g.ID)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("withdraw the rematch request of game %s: %w", gameID, err)
	}
	return out, nil
}

// AnnounceRematchLobby tells the room that a player opened a lobby for the
// rematch (clients that coordinate rematches through lobbies use it).
func (s *Service) AnnounceRematchLobby(ctx context.Context, userID, gameID, lobbyID string) error {
	lobbyID, ok := domain.CanonicalID(lobbyID)
	if !ok {
		return domain.Invalid(map[string]string{"lobbyId": "must be a lobby id"})
	}
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		g, err := s.finishedGameOfPlayer(ctx, tx, userID, gameID)
		if err != nil {
			return err
		}
		if ok, err := tx.NewSelect().Table("lobbies").Where("id = ?", lobbyID).Exists(ctx); err != nil {
			return fmt.Errorf("find lobby %s: %w", lobbyID, err)
		} else if !ok {
			return domain.Errorf(domain.CodeNotFound, "no such lobby")
		}
		for _, p := range g.Players {
			if p != userID {
				if err := s.events.Tell(tx, p, domain.NoticeRematchLobby, RematchLobbyNotice{GameID: g.ID, LobbyID: lobbyID}); err != nil {
					return err
				}
			}
		}
		return s.append(ctx, tx, &g, s.now(), columns{}, false, rules.Event{Name: domain.EventRematchLobby, Data: RematchLobby{UserID: userID, LobbyID: lobbyID}})
	})
	if err != nil {
		return fmt.Errorf("announce the rematch lobby of game %s: %w", gameID, err)
	}
	return nil
}

func (s *Service) finishedGameOfPlayer(ctx context.Context, tx db.Tx, userID, gameID string) (Game, error) {
	g, err := lockGame(ctx, tx, gameID)
	if err != nil {
		return g, err
	}
	if !slices.Contains(g.Players, userID) {
		return g, domain.Errorf(domain.CodeNotAPlayer, "only the players can ask for a rematch")
	}
	if g.Status == StatusActive || g.Status == StatusWaiting {
		return g, domain.Errorf(domain.CodeConflict, "the game is not over yet")
	}
	return g, nil
}

// RematchesAsked returns the free games of the user whose other player
// asked, since since, for a rematch that the user has not answered and
// that has not started.
func (s *Service) RematchesAsked(ctx context.Context, userID string, since time.Time) ([]string, error) {
	var ids []string
	err := s.db.NewRaw(`SELECT r.game_id FROM rematches AS r
		JOIN game_players AS p ON p.game_id = r.game_id AND p.user_id = ?
		JOIN games AS g ON g.id = r.game_id AND g.stake_minor = 0
		WHERE r.user_id <> ? AND r.requested_at > ?
			AND NOT EXISTS (SELECT 1 FROM rematches AS m WHERE m.game_id = r.game_id AND m.user_id = ?)
			AND NOT EXISTS (SELECT 1 FROM games AS n WHERE n.rematch_of = r.game_id)`,
		userID, userID, since, userID).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("read the rematches asked of %s: %w", userID, err)
	}
	return ids, nil
}
