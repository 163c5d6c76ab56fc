// Package integrity keeps money from being won by fixing games: pools and
// markets only on staked games and capped relative to the player pot,
// accounts linked to a player kept out of that player's bets and market,
// and the bets and market of a suspicious game's end held until an admin
// releases or voids them.
//
// Links answers the rules that the money-in paths (bets, market orders)
// ask in their own transactions; Referee settles finished games (the
// games' settlement, a game.Participant) and runs the admins' review queue.
package integrity

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/money"
)

// Why two accounts are linked.
const (
	ReasonReferral = "referral"     // one referred the other
	ReasonTip      = "tip"          // a tip went between them within LinkWindow
	ReasonTransfer = "transfer"     // a wallet transfer went between them within LinkWindow
	ReasonAddress  = "same-address" // both signed in from one client address within LinkWindow (LINK_BY_IP)
)

// LinkWindow is how long a tip, a transfer or a shared sign-in address
// links two accounts.
const LinkWindow = 30 * 24 * time.Hour

// oneUSDC is one USDC in minor units: what a pair of shares is worth.
const oneUSDC = 1_000_000

// DefaultCapMultiple is POOL_CAP_MULTIPLE's default.
const DefaultCapMultiple = 5

// Config is what the operator sets.
type Config struct {
	// CapMultiple bounds each player's pool at CapMultiple times the
	// player pot, and the market's outstanding pairs at CapMultiple times
	// the player pot in USDC (POOL_CAP_MULTIPLE).
	CapMultiple int64
	// LinkByIP links accounts that signed in from one client address
	// (LINK_BY_IP).
	LinkByIP bool
}

// Links answers the integrity rules of the money-in paths.
type Links struct {
	db  *bun.DB
	now domain.Clock
	cfg Config
}

// NewLinks returns the integrity rules of the money-in paths.
func NewLinks(bdb *bun.DB, now domain.Clock, cfg Config) *Links {
	if cfg.CapMultiple <= 0 {
		cfg.CapMultiple = DefaultCapMultiple
	}
	return &Links{db: bdb, now: now, cfg: cfg}
}

// PoolCap is the most one player's pool may hold in a game whose player
// pot is playerPot (0 for a free game: no pool).
func (g *Links) PoolCap(playerPot int64) int64 { return g.cfg.CapMultiple * playerPot }

// MarketCap is the most pairs of shares a game's market may have
// outstanding when its player pot is playerPot (0 for a free game).
func (g *Links) MarketCap(playerPot int64) int64 { return g.cfg.CapMultiple * playerPot / oneUSDC }

// Link is an account linked to another, why, and the evidence.
type Link struct {
	UserID   string     `json:"userId" bun:"other_id"`
	Username string     `json:"username" bun:"username"`
	Reasons  []string   `json:"reasons" bun:"reasons,array" doc:"referral (one referred the other), tip or transfer (one went between them in the last 30 days), same-address (both signed in from one client address in the last 30 days; with LINK_BY_IP)"`
	Evidence []Evidence `json:"evidence" bun:"evidence" doc:"what made the link, newest first: up to 10 of each kind"`
}

// Evidence is one thing that links two accounts: what it was, when, and
// who did it to whom.
type Evidence struct {
	Kind string    `json:"kind" enum:"referral,tip,transfer,same-address"`
	At   time.Time `json:"at" doc:"referral: when the referred account signed up; tip: when it was sent; transfer: when it was confirmed; same-address: when By last signed in from the address"`
	// By and To: the referrer and the account referred, the tipper and
	// the tip's recipient, the transfer's sender and recipient, or the
	// two accounts of a shared sign-in address.
	By          chat.UserRef `json:"by" doc:"the referrer, the tipper, the transfer's sender, or (same-address) one of the two accounts"`
	To          chat.UserRef `json:"to" doc:"the account referred, the tip's or transfer's recipient, or (same-address) the other account"`
	AmountMinor *int64       `json:"amountMinor" doc:"the tip's or transfer's amount; null for the other kinds"`
	ToAt        *time.Time   `json:"toAt" doc:"same-address: when To last signed in from the address; null for the other kinds"`
}

// evidencePerKind bounds the evidence of one kind a link carries: a pair
// that tipped each other a thousand times is linked by the newest ten.
const evidencePerKind = 10

// Pair is a link of one of the accounts asked about (UserID) to another
// (Link.UserID).
type Pair struct {
	UserID string `bun:"user_id"`
	Link
}

// Linked returns the links between any of users and any of others (every
// other account when others is nil), with their evidence, read in idb (a
// transaction of the caller's, or the database).
func (g *Links) Linked(ctx context.Context, idb bun.IDB, users, others []string) ([]Pair, error) {
	since := g.now().Add(-LinkWindow)
	// Each source is (by, to, kind, at, amount, to_at): see Evidence.
	sources := []string{
		`SELECT referred_by AS by_id, user_id AS to_id, 'referral' AS kind, created_at AS at, NULL::bigint AS amount,
			NULL::timestamptz AS to_at FROM referrals
			WHERE referred_by IS NOT NULL AND (user_id = ANY(?0) OR referred_by = ANY(?0))`,
		`SELECT from_user_id, to_user_id, 'tip', created_at, amount_minor, NULL FROM tips
			WHERE created_at > ?1 AND (from_user_id = ANY(?0) OR to_user_id = ANY(?0))`,
		`SELECT i.user_id, u.id, 'transfer', i.updated_at, i.amount_minor, NULL FROM intents AS i JOIN users AS u ON u.wallet_address = i.destination
			WHERE i.kind = 'transfer' AND i.status = 'confirmed' AND i.updated_at > ?1 AND (i.user_id = ANY(?0) OR u.id = ANY(?0))`,
	}
	if g.cfg.LinkByIP {
		// Only from the side of the accounts asked about: the other
		// side's row says the same.
		sources = append(sources, `SELECT x.user_id, y.user_id, 'same-address', x.last_at, NULL, y.last_at FROM sign_in_addresses AS x
			JOIN sign_in_addresses AS y ON y.address = x.address AND y.user_id <> x.user_id AND y.last_at > ?1
			WHERE x.user_id = ANY(?0) AND x.last_at > ?1`)
	}
	filter := ""
	if others != nil {
		filter = "AND e.other_id = ANY(?2)"
	}
	var out []Pair
	err := idb.NewRaw(`WITH pairs AS (`+strings.Join(sources, " UNION ALL ")+`),
		ends AS (SELECT by_id AS user_id, to_id AS other_id, * FROM pairs WHERE by_id = ANY(?0)
			UNION ALL SELECT to_id, by_id, * FROM pairs WHERE to_id = ANY(?0) AND kind <> 'same-address'),
		ranked AS (SELECT e.*, row_number() OVER (PARTITION BY e.user_id, e.other_id, e.kind ORDER BY e.at DESC) AS n
			FROM ends AS e WHERE e.other_id <> e.user_id `+filter+`)
		SELECT e.user_id, e.other_id, u.username, array_agg(DISTINCT e.kind ORDER BY e.kind) AS reasons,
			json_agg(json_build_object('kind', e.kind, 'at', e.at, 'amountMinor', e.amount, 'toAt', e.to_at,
				'by', json_build_object('userId', e.by_id, 'username', b.username),
				'to', json_build_object('userId', e.to_id, 'username', t.username)) ORDER BY e.at DESC, e.kind) FILTER (WHERE e.n <= ?3) AS evidence
		FROM ranked AS e JOIN users AS u ON u.id = e.other_id JOIN users AS b ON b.id = e.by_id JOIN users AS t ON t.id = e.to_id
		GROUP BY e.user_id, e.other_id, u.username ORDER BY e.user_id, u.username`,
		pgdialect.Array(users), since, pgdialect.Array(others), evidencePerKind).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read the links of %d accounts: %w", len(users), err)
	}
	for i := range out {
		for j := range out[i].Evidence {
			out[i].Evidence[j].utc()
		}
	}
	return out, nil
}

// utc puts e's times in UTC, as the API sends every time.
func (e *Evidence) utc() {
	e.At = e.At.UTC()
	if e.ToAt != nil {
		at := e.ToAt.UTC()
		e.ToAt = &at
	}
}

// LinksOf returns every account linked to userID, by username.
func (g *Links) LinksOf(ctx context.Context, userID string) ([]Link, error) {
	pairs, err := g.Linked(ctx, g.db, []string{userID}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Link, len(pairs))
	for i, p := range pairs {
		out[i] = p.Link
	}
	return out, nil
}

// CheckNotLinked refuses (LINKED_TO_PLAYER) a bet or trade of userID on
// a game of players when userID is linked to one of them.
func (g *Links) CheckNotLinked(ctx context.Context, idb bun.IDB, userID string, players []string) error {
	refused, err := g.LinkRefusals(ctx, idb, []string{userID}, players)
	if err != nil {
		return err
	}
	if e := refused[userID]; e != nil {
		return e
	}
	return nil
}

// LinkRefusals returns the LINKED_TO_PLAYER refusal of each of users that
// is linked to one of players (nobody else is in the map), for the trades
// of a batch of orders in one statement.
func (g *Links) LinkRefusals(ctx context.Context, idb bun.IDB, users, players []string) (map[string]*domain.Error, error) {
	pairs, err := g.Linked(ctx, idb, users, players)
	if err != nil {
		return nil, err
	}
	out := map[string]*domain.Error{}
	for _, p := range pairs {
		if out[p.UserID] == nil {
			out[p.UserID] = linkedError(p.Link)
		}
	}
	return out, nil
}

// CheckEntrant refuses (LINKED_ACCOUNT) userID's entry in a paid arena
// when userID is linked to one of its entrants, naming the first and why.
func (g *Links) CheckEntrant(ctx context.Context, idb bun.IDB, userID string, entrants []string) error {
	if len(entrants) == 0 {
		return nil
	}
	pairs, err := g.Linked(ctx, idb, []string{userID}, entrants)
	if err != nil || len(pairs) == 0 {
		return err
	}
	l := pairs[0].Link
	return domain.Errorf(domain.CodeLinkedAccount,
		"your account is linked to %s, who is already in this arena (%s), so it may not enter: a paid arena takes no two linked accounts",
		l.Username, ReasonWords(l.Reasons)).With("entrantId", l.UserID)
}

// linkedError is the LINKED_TO_PLAYER refusal for an account linked to the
// player l.
func linkedError(l Link) *domain.Error {
	return domain.Errorf(domain.CodeLinkedToPlayer,
		"your account is linked to %s, a player of this game (%s), so it may not bet on or trade this game",
		l.Username, ReasonWords(l.Reasons)).With("playerId", l.UserID)
}

// ReasonWords says why two accounts are linked, one phrase per reason,
// joined with "; " ("a tip between you in the last 30 days"), as the
// refusal and the admin's queue say it.
func ReasonWords(reasons []string) string {
	words := make([]string, len(reasons))
	for i, r := range reasons {
		switch r {
		case ReasonReferral:
			words[i] = "one referred the other"
		case ReasonTip:
			words[i] = "a tip went between them in the last 30 days"
		case ReasonTransfer:
			words[i] = "a transfer went between them in the last 30 days"
		case ReasonAddress:
			words[i] = "they signed in from the same address in the last 30 days"
		default:
			words[i] = r
		}
	}
	return strings.Join(words, "; ")
}

// Sentence says e in words, naming the account you (a user id) "you":
// "alice tipped bob 0.01 USDC on 1 Dec 2026, 14:05 UTC".
func (e Evidence) Sentence(you string) string {
	by, to := nameOf(e.By, you), nameOf(e.To, you)
	switch e.Kind {
	case ReasonReferral:
		return by + " referred " + to + " on " + when(e.At)
	case ReasonTip:
		return by + " tipped " + to + " " + usdc(e.AmountMinor) + " USDC on " + when(e.At)
	case ReasonTransfer:
		return by + " sent " + to + " " + usdc(e.AmountMinor) + " USDC on " + when(e.At)
	case ReasonAddress:
		s := by + " and " + to + " signed in from the same address: " + by + " on " + when(e.At)
		if e.ToAt != nil {
			s += ", " + to + " on " + when(*e.ToAt)
		}
		return s
	}
	return by + " and " + to + " are linked (" + e.Kind + ") since " + when(e.At)
}

func nameOf(u chat.UserRef, you string) string {
	if you != "" && u.UserID == you {
		return "you"
	}
	return u.Username
}

func usdc(minor *int64) string {
	if minor == nil {
		return "?"
	}
	return money.FormatUSDC(*minor)
}

// when writes a time as every page shows one (views.DateTime).
func when(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") }
