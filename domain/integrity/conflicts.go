package integrity

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"wager/domain"
	"wager/domain/money"
)

// The stakes that keep a member of staff from deciding a held game.
const (
	StakePlayer = "player" // they played in it
	StakeBet    = "bet"    // they bet on it
	StakeTrade  = "trade"  // they traded in its market
	StakeEntry  = "entry"  // they entered its arena
	StakeTip    = "tip"    // a tip went between them and someone in it within LinkWindow
	StakeLink   = "link"   // they are linked to someone in it otherwise (referral, transfer, same address)
)

// Conflict is a stake a member of staff has in a held game: why they may
// not release or void it.
type Conflict struct {
	Rule string `json:"rule" enum:"player,bet,trade,entry,tip,link"`
	Why  string `json:"why" doc:"the stake in words, to the admin: \"you bet 1.50 USDC on this game\""`
}

// stake is what one member of staff has in one held game, as the
// conflict rules weigh it.
type stake struct {
	staff    string
	played   bool
	bets     int
	betMinor int64
	holdings []holding
	arena    *string // the name of the game's arena, when they entered it
	links    []Pair  // their links to anyone in the game, with evidence
}

// holding is the staff's position in one outcome of the game's market.
type holding struct {
	Username string `json:"username"` // whose shares
	Shares   int64  `json:"shares"`
}

// conflictRules are the rules of conflict of interest, in the order a
// refusal names what they find.
var conflictRules = []func(stake) []Conflict{playedIn, betOn, tradedIn, enteredArena, tipped, linkedTo}

func playedIn(s stake) []Conflict {
	if !s.played {
		return nil
	}
	return []Conflict{{StakePlayer, "you played in this game"}}
}

func betOn(s stake) []Conflict {
	if s.bets == 0 {
		return nil
	}
	return []Conflict{{StakeBet, "you bet " + money.FormatUSDC(s.betMinor) + " USDC on this game"}}
}

// tradedIn counts a position sold out too: its owner traded on the game.
func tradedIn(s stake) []Conflict {
	if len(s.holdings) == 0 {
		return nil
	}
	var held []string
	for _, h := range s.holdings {
		switch {
		case h.Shares == 1:
			held = append(held, "1 share of "+h.Username)
		case h.Shares > 1:
			held = append(held, strconv.FormatInt(h.Shares, 10)+" shares of "+h.Username)
		}
	}
	if len(held) == 0 {
		return []Conflict{{StakeTrade, "you traded in this game's market"}}
	}
	return []Conflict{{StakeTrade, "you hold " + strings.Join(held, " and ") + " in this game's market"}}
}

func enteredArena(s stake) []Conflict {
	if s.arena == nil {
		return nil
	}
	return []Conflict{{StakeEntry, "you entered this game's arena, " + *s.arena}}
}

// tipped names the newest tip between the staff and each person of the
// game within LinkWindow.
func tipped(s stake) []Conflict {
	var out []Conflict
	for _, p := range s.links {
		for _, e := range p.Evidence {
			if e.Kind == ReasonTip {
				out = append(out, Conflict{StakeTip, e.Sentence(s.staff)})
				break
			}
		}
	}
	return out
}

// linkedTo names the links other than tips (tipped names those), with the
// newest evidence of each kind.
func linkedTo(s stake) []Conflict {
	var out []Conflict
	for _, p := range s.links {
		var reasons, evidence []string
		for _, r := range p.Reasons {
			if r == ReasonTip {
				continue
			}
			reasons = append(reasons, r)
			for _, e := range p.Evidence {
				if e.Kind == r {
					evidence = append(evidence, e.Sentence(s.staff))
					break
				}
			}
		}
		if len(reasons) > 0 {
			out = append(out, Conflict{StakeLink, "you are linked to " + p.Username + ": " + ReasonWords(reasons) +
				" (" + strings.Join(evidence, "; ") + ")"})
		}
	}
	return out
}

// ConflictWords joins the stakes of cs in one phrase: "you bet 1.50 USDC
// on this game; you hold 5 shares of bob in this game's market".
func ConflictWords(cs []Conflict) string {
	whys := make([]string, len(cs))
	for i, c := range cs {
		whys[i] = c.Why
	}
	return strings.Join(whys, "; ")
}

// conflictError is the CONFLICT_OF_INTEREST refusal of a decision by a
// member of staff with the stakes cs.
func conflictError(cs []Conflict) *domain.Error {
	return domain.Errorf(domain.CodeConflictOfInterest,
		"you may not release or void this game: %s; another member of staff, an admin without a stake in it, must decide it", ConflictWords(cs))
}

// CheckStaff refuses (CONFLICT_OF_INTEREST) a decision on game gameID by
// staffID when they have a stake in it or a link to someone who does,
// read in idb: an arena's void (tournament.Service.VoidGame) asks it.
func (r *Referee) CheckStaff(ctx context.Context, idb bun.IDB, staffID, gameID string) error {
	conflicts, err := r.conflictsOf(ctx, idb, staffID, gameID)
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		return conflictError(conflicts)
	}
	return nil
}

// conflictsOf returns the stakes staffID has in the held game gameID, read
// in idb (the decision's transaction, or the database): none when they
// may decide it.
func (r *Referee) conflictsOf(ctx context.Context, idb bun.IDB, staffID, gameID string) ([]Conflict, error) {
	s, err := r.stakeOf(ctx, idb, staffID, gameID)
	if err != nil {
		return nil, err
	}
	out := []Conflict{}
	for _, rule := range conflictRules {
		out = append(out, rule(s)...)
	}
	return out, nil
}

// stakeOf reads what staffID has in the game gameID, and their links to
// anyone in it: its players, bettors, traders and its arena's entrants.
func (r *Referee) stakeOf(ctx context.Context, idb bun.IDB, staffID, gameID string) (stake, error) {
	var row struct {
		Played   bool      `bun:"played"`
		Bets     int       `bun:"bets"`
		BetMinor int64     `bun:"bet_minor"`
		Holdings []holding `bun:"holdings"`
		Arena    *string   `bun:"arena"`
		Everyone []string  `bun:"everyone,array"`
	}
	err := idb.NewRaw(`SELECT
			EXISTS (SELECT 1 FROM game_players WHERE game_id = ?0 AND user_id = ?1) AS played,
			(SELECT count(*) FROM bets WHERE game_id = ?0 AND bettor_id = ?1) AS bets,
			(SELECT coalesce(sum(amount_minor), 0) FROM bets WHERE game_id = ?0 AND bettor_id = ?1) AS bet_minor,
			(SELECT coalesce(json_agg(json_build_object('username', u.username, 'shares', p.shares) ORDER BY u.username), '[]')
				FROM market_positions AS p JOIN users AS u ON u.id = p.outcome_id WHERE p.game_id = ?0 AND p.user_id = ?1) AS holdings,
			(SELECT t.name FROM games AS g JOIN tournaments AS t ON t.id = g.tournament_id
				JOIN tournament_players AS e ON e.tournament_id = t.id AND e.user_id = ?1 WHERE g.id = ?0) AS arena,
			ARRAY(SELECT user_id FROM game_players WHERE game_id = ?0
				UNION SELECT bettor_id FROM bets WHERE game_id = ?0
				UNION SELECT user_id FROM market_positions WHERE game_id = ?0
				UNION SELECT e.user_id FROM games AS g JOIN tournament_players AS e ON e.tournament_id = g.tournament_id WHERE g.id = ?0
			)::text[] AS everyone`, gameID, staffID).Scan(ctx, &row)
	if err != nil {
		return stake{}, fmt.Errorf("read the stake of %s in game %s: %w", staffID, gameID, err)
	}
	s := stake{staff: staffID, played: row.Played, bets: row.Bets, betMinor: row.BetMinor, holdings: row.Holdings, arena: row.Arena}
	if len(row.Everyone) > 0 {
		if s.links, err = r.links.Linked(ctx, idb, []string{staffID}, row.Everyone); err != nil {
			return stake{}, err
		}
	}
	return s, nil
}
