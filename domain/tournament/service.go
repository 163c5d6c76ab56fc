package tournament

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/game"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/social"
)

// Tournament is a tournament as lists show it.
type Tournament struct {
	bun.BaseModel `bun:"table:tournaments,alias:t"`

	ID             string          `bun:"id,pk,type:uuid" json:"id"`
	Name           string          `bun:"name" json:"name" doc:"as typed (not HTML-escaped)"`
	GameType       string          `bun:"game_type" json:"gameType" enum:"connect4,rps"`
	Settings       json.RawMessage `bun:"settings,type:jsonb" json:"settings" schema:"GameSettings" doc:"the settings of every game of the tournament"`
	EntryFeeMinor  int64           `bun:"entry_fee_minor" json:"entryFeeMinor" doc:"locked from the available balance at the join; 0 for a free tournament"`
	PrizePoolMinor int64           `bun:"pool_minor" json:"prizePoolMinor" doc:"the entry fees in the pool so far; the prizes share it less the 1% fee"`
	PrizeSplitBps  []int           `bun:"prize_split_bps,array" json:"prizeSplitBps" doc:"what each place wins of the pool less the fee, in basis points"`
	StartsAt       time.Time       `bun:"starts_at" json:"startsAt"`
	EndsAt         time.Time       `bun:"ends_at" json:"endsAt" doc:"no game starts after it; games running then still count, and the tournament finishes when the last ends"`
	Status         string          `bun:"status" json:"status" enum:"scheduled,running,finished,cancelled"`
	CreatedByID    string          `bun:"created_by,type:uuid" json:"-"`
	CreatorName    string          `bun:"creator_name,scanonly" json:"-"`
	CreatedBy      UserRef         `bun:"-" json:"createdBy"`
	PlayerCount    int             `bun:"player_count" json:"playerCount" doc:"the entrants in the standings (one who withdrew after the start stays in them)"`
	MaxPlayers     int             `bun:"max_players" json:"maxPlayers"`
	AgentsAllowed  bool            `bun:"agents_allowed" json:"agentsAllowed" doc:"whether bot accounts may enter (403 AGENTS_NOT_ALLOWED when not)"`
	CreatedAt      time.Time       `bun:"created_at" json:"createdAt"`
	LastSeq        int             `bun:"seq" json:"lastSeq" doc:"the seq of the last event of the tournament's live room"`
	FinishedAt     *time.Time      `bun:"finished_at" json:"finishedAt" doc:"when it finished or was cancelled; null before"`
	ScheduleID     *string         `bun:"schedule_id,type:uuid" json:"scheduleId" doc:"the recurring arena's schedule this is an occurrence of; null for an arena scheduled once"`
	Recurrence     *string         `bun:"-" json:"recurrence" doc:"for an occurrence of a recurring arena, when it recurs in words (every day at 18:00 UTC); null otherwise"`
	Every          *string         `bun:"every,scanonly" json:"-"`
	At             *string         `bun:"at,scanonly" json:"-"`

	RemindedAt    *time.Time      `bun:"reminded_at" json:"-"`
	StandingsAt   *time.Time      `bun:"standings_at" json:"-"`
	StandingsHash *int64          `bun:"standings_hash" json:"-"`
	ChangedAt     time.Time       `bun:"changed_at" json:"-"`
	PrizesJSON    json.RawMessage `bun:"prizes,type:jsonb" json:"-"`
}

// Detail is a tournament with its standings and, once finished, prizes.
type Detail struct {
	Tournament
	Standings []Standing `json:"standings" doc:"every entrant, best first; ties share a rank"`
	Prizes    []Prize    `json:"prizes" doc:"once finished: what each winner was paid; empty before"`
}

// Entry is a player's place in a tournament, as joining or withdrawing
// answers it.
type Entry struct {
	TournamentID string `json:"tournamentId"`
	UserID       string `json:"userId"`
	Status       string `json:"status" enum:"joined,paused,withdrawn" doc:"joined: in the tournament, paired while it runs; paused: withdrew after the start (in the standings, not paired, may join again without paying); withdrawn: left before the start, the entry fee refunded"`
	// LockedMinor is what this call locked from the available balance.
	LockedMinor int64 `json:"lockedMinor" doc:"the entry fee this call locked from your available balance (0 for a free tournament or a return after a pause)"`
	// RefundedMinor is what this call gave back.
	RefundedMinor int64      `json:"refundedMinor" doc:"the entry fee this call gave back to your available balance"`
	Tournament    Tournament `json:"tournament"`
}

// Entry statuses.
const (
	EntryJoined    = "joined"
	EntryPaused    = "paused"
	EntryWithdrawn = "withdrawn"
)

// Kinds of ledger transaction and of wallet history line.
const (
	KindEntry  = "tournament_entry"
	KindRefund = "tournament_refund"
	KindPrizes = "tournament_prize"

	historyEntry  = "tournament entry"
	historyRefund = "tournament refund"
	historyPrize  = "tournament prize"
)

// Protection is what player protection says of entry fees: an entry
// counts as a stake.
type Protection interface {
	// CheckEntry refuses the entry fee of the player asking in this
	// request (a free entry is never refused).
	CheckEntry(ctx context.Context, idb bun.IDB, userID string, fee int64) error
}

// Links keeps linked accounts (one referred the other, a tip or transfer
// between them, ...) out of the same paid arena: one could throw its
// games to the other.
type Links interface {
	// CheckEntrant refuses (LINKED_ACCOUNT) userID when linked to one of
	// entrants, read in idb.
	CheckEntrant(ctx context.Context, idb bun.IDB, userID string, entrants []string) error
}

// Staff keeps staff with a stake in an arena game (they entered its
// arena, or are linked to someone in it) from voiding it.
type Staff interface {
	// CheckStaff refuses (CONFLICT_OF_INTEREST) staffID's decision on
	// gameID, read in idb.
	CheckStaff(ctx context.Context, idb bun.IDB, staffID, gameID string) error
}

// Feed records a tournament's winners in the public activity feed.
type Feed interface {
	TournamentWon(ctx context.Context, tx db.Tx, winnerID string, data social.TournamentWon) error
}

// Deps are what a Service works with.
type Deps struct {
	Games   *game.Service
	Notify  *notify.Service
	Feed    Feed          // nil: no feed entries
	Tell    money.Teller  // players' new balances
	Events  *eventlog.Log // the rooms' event streams
	Protect Protection    // nil: none
	Links   Links         // nil: linked accounts are not kept apart
	Staff   Staff         // nil: any admin may void an arena game
	// MaxPlayers is the largest maxPlayers a new tournament may ask for
	// (0: MaxPlayers).
	MaxPlayers int
	// CreatePerDay bounds the arenas one player creates in CreateWindow
	// (0: DefaultCreatePerDay), and ScheduledMax those scheduled or running
	// (0: DefaultScheduledMax).
	CreatePerDay, ScheduledMax int
	// Unlimited are the wallets whose accounts neither bound holds: the
	// demo bots, which keep a free arena scheduled around the clock, and
	// the admins, who must be able to when other players filled the
	// arenas scheduled.
	Unlimited []string
}

// Service runs tournaments.
type Service struct {
	db         *bun.DB
	now        domain.Clock
	log        *slog.Logger
	games      *game.Service
	notify     *notify.Service
	feed       Feed
	tell       money.Teller
	events     *eventlog.Log
	protect    Protection
	links      Links
	staff      Staff
	maxPlayers int

	createPerDay, scheduledMax int
	unlimited                  []string

	mu  sync.Mutex
	rnd *rand.Rand

	// Paired is told how long each player of a new pairing had waited
	// (nil: nobody): the load test's figure of pairing.
	Paired func(waited time.Duration)
}

// New returns a Service.
func New(bdb *bun.DB, now domain.Clock, log *slog.Logger, d Deps) *Service {
	if d.MaxPlayers <= 0 {
		d.MaxPlayers = MaxPlayers
	}
	if d.CreatePerDay <= 0 {
		d.CreatePerDay = DefaultCreatePerDay
	}
	if d.ScheduledMax <= 0 {
		d.ScheduledMax = DefaultScheduledMax
	}
	seed := uint64(time.Now().UnixNano())
	return &Service{db: bdb, now: now, log: log, games: d.Games, notify: d.Notify, feed: d.Feed, tell: d.Tell, events: d.Events,
		protect: d.Protect, links: d.Links, staff: d.Staff, maxPlayers: d.MaxPlayers, createPerDay: d.CreatePerDay, scheduledMax: d.ScheduledMax,
		unlimited: d.Unlimited, rnd: rand.New(rand.NewPCG(seed, seed^0x5eed))}
}

// MaxPlayersLimit is the largest maxPlayers a new tournament may ask for.
func (s *Service) MaxPlayersLimit() int { return s.maxPlayers }

// Create schedules a tournament that userID creates. Errors:
// VALIDATION_ERROR naming each invalid field; RATE_LIMITED (with
// retryAfterSeconds) past the creator's arenas of the last 24 hours or
// the arenas scheduled or running.
func (s *Service) Create(ctx context.Context, userID string, n NewTournament) (Tournament, error) {
	now := s.now()
	v, err := n.Validate(now, s.maxPlayers)
	if err != nil {
		return Tournament{}, err
	}
	t := Tournament{ID: uuid.NewString(), Name: v.name, GameType: v.gameType, Settings: v.settings, EntryFeeMinor: v.fee,
		PrizeSplitBps: v.split, StartsAt: v.startsAt, EndsAt: v.endsAt, Status: StatusScheduled, CreatedByID: userID,
		MaxPlayers: v.maxPlayers, AgentsAllowed: v.agents, CreatedAt: now, ChangedAt: now}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if err := s.boundCreation(ctx, tx, userID, now); err != nil {
			return err
		}
		if err := insert(ctx, tx, t); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT username FROM users WHERE id = ?", userID).Scan(&t.CreatorName)
	})
	if err != nil {
		return Tournament{}, fmt.Errorf("create a tournament: %w", err)
	}
	t.CreatedBy = UserRef{UserID: userID, Username: t.CreatorName}
	return t, nil
}

// insert stores a new tournament, unless one of its schedule starts at
// its start already (an occurrence created by another instance).
func insert(ctx context.Context, tx db.Tx, t Tournament) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO tournaments (id, name, game_type, settings, entry_fee_minor, prize_split_bps, starts_at,
			ends_at, max_players, agents_allowed, status, created_by, created_at, changed_at, schedule_id)
		VALUES (?, ?, ?, ?, ?, ?::integer[], ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		t.ID, t.Name, t.GameType, string(t.Settings), t.EntryFeeMinor, intArray(t.PrizeSplitBps), t.StartsAt, t.EndsAt,
		t.MaxPlayers, t.AgentsAllowed, t.Status, t.CreatedByID, t.CreatedAt, t.ChangedAt, t.ScheduleID)
	if err != nil {
		return fmt.Errorf("store tournament %s: %w", t.Name, err)
	}
	return nil
}

// boundCreation refuses (RATE_LIMITED) an arena past the creator's daily
// limit or past the arenas scheduled or running. Each count is read under
// its advisory lock (the creator's, then the one of all creations), so
// that of concurrent creations only those that fit pass.
func (s *Service) boundCreation(ctx context.Context, tx db.Tx, userID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('tournaments_created'), hashtext(?))", userID); err != nil {
		return fmt.Errorf("lock the arenas created by %s: %w", userID, err)
	}
	var (
		unlimited bool
		created   int
		oldest    time.Time
	)
	err := tx.QueryRowContext(ctx, `SELECT coalesce(u.wallet_address = ANY(?), false), count(t.id), coalesce(min(t.created_at), ?)
		FROM users AS u LEFT JOIN tournaments AS t ON t.created_by = u.id AND t.created_at > ?
		WHERE u.id = ? GROUP BY u.id`, pgdialect.Array(s.unlimited), now, now.Add(-CreateWindow), userID).Scan(&unlimited, &created, &oldest)
	if err != nil {
		return fmt.Errorf("count the arenas created by %s: %w", userID, err)
	}
	if !unlimited && created >= s.createPerDay {
		free := oldest.Add(CreateWindow)
		return domain.Errorf(domain.CodeRateLimited, "a player may create at most %d arenas in 24 hours; your next one can be created at %s UTC",
			s.createPerDay, free.UTC().Format("15:04 on Jan 2")).With("retryAfterSeconds", retryAfter(free.Sub(now)))
	}
	if unlimited {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('tournaments_scheduled'), 0)"); err != nil {
		return fmt.Errorf("lock the arenas scheduled: %w", err)
	}
	var (
		open   int
		endsAt time.Time
	)
	if err := tx.QueryRowContext(ctx, "SELECT count(*), coalesce(min(ends_at), ?) FROM tournaments WHERE status IN (?, ?)",
		now, StatusScheduled, StatusRunning).Scan(&open, &endsAt); err != nil {
		return fmt.Errorf("count the arenas scheduled or running: %w", err)
	}
	if open >= s.scheduledMax {
		// A place frees when the first of them ends (its last game a little
		// later): not sooner than FullRetry.
		free := endsAt
		if free.Before(now.Add(FullRetry)) {
			free = now.Add(FullRetry)
		}
		return domain.Errorf(domain.CodeRateLimited, "%d arenas are scheduled or running, the most there may be at once; the first of them ends at %s UTC",
			open, free.UTC().Format("15:04 on Jan 2")).With("retryAfterSeconds", retryAfter(free.Sub(now)))
	}
	return nil
}

// retryAfter is a wait in whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}

// intArray writes ints as a PostgreSQL array literal.
func intArray(v []int) string {
	b, _ := json.Marshal(v)
	return "{" + string(b[1:len(b)-1]) + "}"
}

// selectTournaments is the query of tournaments with their creators'
// names.
func (s *Service) selectTournaments(idb bun.IDB, out any) *bun.SelectQuery {
	return idb.NewSelect().Model(out).ColumnExpr("t.*").ColumnExpr("u.username AS creator_name, sch.every, sch.at").
		Join("JOIN users AS u ON u.id = t.created_by").Join("LEFT JOIN tournament_schedules AS sch ON sch.id = t.schedule_id")
}

func (t *Tournament) named() {
	t.CreatedBy = UserRef{UserID: t.CreatedByID, Username: t.CreatorName}
	if t.Every != nil && t.At != nil {
		r := Recurrence(*t.Every, *t.At)
		t.Recurrence = &r
	}
}

// ParseStatus reads ?status= of the list: "" for scheduled and running.
// VALIDATION_ERROR naming status for another value.
func ParseStatus(s string) (string, error) {
	switch s {
	case "", StatusScheduled, StatusRunning, StatusFinished, StatusCancelled:
		return s, nil
	}
	return "", domain.Invalid(map[string]string{"status": "must be scheduled, running, finished or cancelled"})
}

// List returns tournaments of a status ("" for scheduled and running),
// soonest first (finished and cancelled ones: the latest first), at most
// limit after the one whose id is before ("" for the first page).
// VALIDATION_ERROR naming status or before.
func (s *Service) List(ctx context.Context, status string, limit int, before string) ([]Tournament, error) {
	status, err := ParseStatus(status)
	if err != nil {
		return nil, err
	}
	out := []Tournament{}
	q := s.selectTournaments(s.db, &out)
	order, cmp := "ASC", ">"
	if status == StatusFinished || status == StatusCancelled {
		order, cmp = "DESC", "<"
	}
	if status == "" {
		q = q.Where("t.status IN (?, ?)", StatusScheduled, StatusRunning)
	} else {
		q = q.Where("t.status = ?", status)
	}
	if before != "" {
		id, ok := domain.CanonicalID(before)
		if !ok {
			return nil, domain.Invalid(map[string]string{"before": "must be the id of a tournament from a previous page"})
		}
		q = q.Where("(t.starts_at, t.id) "+cmp+" (SELECT starts_at, id FROM tournaments WHERE id = ?)", id)
	}
	if err := q.OrderExpr("t.starts_at " + order + ", t.id " + order).Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list tournaments: %w", err)
	}
	for i := range out {
		out[i].named()
	}
	return out, nil
}

var errNoTournament = domain.Errorf(domain.CodeNotFound, "no such tournament")

// Get returns a tournament with its standings and prizes. NOT_FOUND when
// there is none.
func (s *Service) Get(ctx context.Context, id string) (Detail, error) {
	id, ok := domain.CanonicalID(id)
	if !ok {
		return Detail{}, errNoTournament
	}
	var d Detail
	if err := s.selectTournaments(s.db, &d.Tournament).Where("t.id = ?", id).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return Detail{}, errNoTournament
	} else if err != nil {
		return Detail{}, fmt.Errorf("read tournament %s: %w", id, err)
	}
	d.named()
	st, err := s.standings(ctx, s.db, id, false)
	if err != nil {
		return Detail{}, err
	}
	d.Standings = st
	d.Prizes = []Prize{}
	if len(d.PrizesJSON) > 0 {
		if err := json.Unmarshal(d.PrizesJSON, &d.Prizes); err != nil {
			return Detail{}, fmt.Errorf("read the prizes of tournament %s: %w", id, err)
		}
	}
	return d, nil
}

// Around is how many lines above and below a player StandingsAround
// answers.
const Around = 5

// StandingsAround returns the lines of a tournament's standings around
// userID's own: Around above it, it, and Around below. NOT_FOUND when
// there is no such tournament, CONFLICT when the user is not in it.
func (s *Service) StandingsAround(ctx context.Context, id, userID string) ([]Standing, int, error) {
	d, err := s.Get(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	i := slices.IndexFunc(d.Standings, func(st Standing) bool { return st.UserID == userID })
	if i < 0 {
		return nil, 0, domain.Errorf(domain.CodeConflict, "you are not in this tournament")
	}
	return d.Standings[max(0, i-Around):min(len(d.Standings), i+Around+1)], len(d.Standings), nil
}

// standings reads and ranks a tournament's standings, locking its
// players' rows when lock is set.
func (s *Service) standings(ctx context.Context, idb bun.IDB, id string, lock bool) ([]Standing, error) {
	var rows []struct {
		UserID   string  `bun:"user_id"`
		Username string  `bun:"username"`
		Score    int     `bun:"score"`
		Games    int     `bun:"games"`
		Wins     int     `bun:"wins"`
		Draws    int     `bun:"draws"`
		Losses   int     `bun:"losses"`
		Streak   int     `bun:"streak"`
		Current  *string `bun:"current_game"`
		Paused   bool    `bun:"paused"`
		Reason   *string `bun:"paused_reason"`
		Berserks int     `bun:"berserks"`
		Bot      bool    `bun:"bot_account"`
	}
	q := idb.NewSelect().TableExpr("tournament_players AS p").Join("JOIN users AS u ON u.id = p.user_id").
		ColumnExpr("p.user_id, u.username, p.score, p.games, p.wins, p.draws, p.losses, p.streak, p.current_game, p.paused, p.paused_reason").
		ColumnExpr("p.berserks, u.bot_account").
		Where("p.tournament_id = ?", id)
	if lock {
		q = q.For("UPDATE OF p")
	}
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read the standings of tournament %s: %w", id, err)
	}
	out := make([]Standing, len(rows))
	for i, r := range rows {
		out[i] = Standing{UserID: r.UserID, Username: r.Username, Score: r.Score, Games: r.Games, Wins: r.Wins, Draws: r.Draws,
			Losses: r.Losses, OnFire: Record{Streak: r.Streak}.OnFire(), CurrentGameID: r.Current, Paused: r.Paused, Bot: r.Bot, Berserks: r.Berserks}
		if r.Paused {
			out[i].PausedReason = r.Reason
		}
	}
	return Rank(out), nil
}

// lock reads a tournament and locks its row for the transaction.
// NOT_FOUND when there is none.
func (s *Service) lock(ctx context.Context, tx db.Tx, id string) (Tournament, error) {
	var t Tournament
	id, ok := domain.CanonicalID(id)
	if !ok {
		return t, errNoTournament
	}
	err := s.selectTournaments(tx, &t).Where("t.id = ?", id).For("UPDATE OF t").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return t, errNoTournament
	}
	if err != nil {
		return t, fmt.Errorf("lock tournament %s: %w", id, err)
	}
	t.named()
	return t, nil
}

// entrant is a player's row in a tournament.
type entrant struct {
	bun.BaseModel `bun:"table:tournament_players,alias:p"`

	TournamentID string     `bun:"tournament_id,pk,type:uuid"`
	UserID       string     `bun:"user_id,pk,type:uuid"`
	JoinedAt     time.Time  `bun:"joined_at"`
	EntryRef     *string    `bun:"entry_ref"`
	FeeMinor     int64      `bun:"fee_minor"`
	Paused       bool       `bun:"paused"`
	WaitingSince *time.Time `bun:"waiting_since"`
}

// Join enters userID in a tournament, or has a player who withdrew after
// the start play again (without paying twice). A paid entry locks the fee
// from the available balance. Joining again while in answers the entry
// unchanged. Errors: NOT_FOUND; CONFLICT when the tournament is over
// (finished, cancelled, or past its end) or full; AGENTS_NOT_ALLOWED for
// a bot account when the arena allows no agents; LINKED_ACCOUNT when a
// paid tournament has an entrant linked to the user; INSUFFICIENT_FUNDS;
// player protection's refusals of the fee (an entry counts as a stake).
func (s *Service) Join(ctx context.Context, userID, id string) (Entry, error) {
	var out Entry
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		t, err := s.lock(ctx, tx, id)
		if err != nil {
			return err
		}
		now := s.now()
		if t.Status == StatusFinished || t.Status == StatusCancelled {
			return domain.Errorf(domain.CodeConflict, "the tournament is %s", t.Status)
		}
		if !now.Before(t.EndsAt) {
			return domain.Errorf(domain.CodeConflict, "the tournament has ended: no more games start")
		}
		out = Entry{TournamentID: t.ID, UserID: userID, Status: EntryJoined}
		var e entrant
		err = tx.NewSelect().Model(&e).Where("tournament_id = ? AND user_id = ?", t.ID, userID).For("UPDATE").Scan(ctx)
		switch {
		case err == nil && !e.Paused:
			out.Tournament = t
			return nil
		case err == nil:
			if err := s.unpause(ctx, tx, t, e, now); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read the entry of %s in tournament %s: %w", userID, t.ID, err)
		default:
			if t.PlayerCount >= t.MaxPlayers {
				return domain.Errorf(domain.CodeConflict, "the tournament is full: %d of %d players", t.PlayerCount, t.MaxPlayers)
			}
			if err := s.checkAgents(ctx, tx, t, userID); err != nil {
				return err
			}
			if err := s.checkNotLinked(ctx, tx, t, userID); err != nil {
				return err
			}
			if s.protect != nil {
				if err := s.protect.CheckEntry(ctx, tx, userID, t.EntryFeeMinor); err != nil {
					return err
				}
				now = s.now() // after the player's lock: the entry goes in after whatever it waited for
			}
			e = entrant{TournamentID: t.ID, UserID: userID, JoinedAt: now, FeeMinor: t.EntryFeeMinor, WaitingSince: &now}
			if t.EntryFeeMinor > 0 {
				ref := "tournament:" + t.ID + ":entry:" + uuid.NewString()
				e.EntryRef = &ref
				if err := s.lockFee(ctx, tx, t, userID, ref, now); err != nil {
					return err
				}
				out.LockedMinor = t.EntryFeeMinor
			}
			if _, err := tx.NewInsert().Model(&e).Exec(ctx); err != nil {
				return fmt.Errorf("enter %s in tournament %s: %w", userID, t.ID, err)
			}
			t.PlayerCount++
			t.PrizePoolMinor += t.EntryFeeMinor
		}
		t.ChangedAt = now
		if _, err := tx.NewUpdate().Model(&t).Column("player_count", "pool_minor", "changed_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("count the entry in tournament %s: %w", t.ID, err)
		}
		out.Tournament = t
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("join tournament %s: %w", id, err)
	}
	return out, nil
}

// checkAgents refuses (AGENTS_NOT_ALLOWED) a bot account's entry in an
// arena that does not allow agents.
func (s *Service) checkAgents(ctx context.Context, tx db.Tx, t Tournament, userID string) error {
	if t.AgentsAllowed {
		return nil
	}
	var bot bool
	if err := tx.QueryRowContext(ctx, "SELECT bot_account FROM users WHERE id = ?", userID).Scan(&bot); err != nil {
		return fmt.Errorf("read whether %s is a bot: %w", userID, err)
	}
	if bot {
		return domain.Errorf(domain.CodeAgentsNotAllowed, "this arena is for people: bot accounts may not enter it")
	}
	return nil
}

// checkNotLinked refuses (LINKED_ACCOUNT) a paid entry of an account
// linked to an entrant. The entrants are read after the tournament's row
// lock, so of two linked accounts joining at once the second sees the first.
func (s *Service) checkNotLinked(ctx context.Context, tx db.Tx, t Tournament, userID string) error {
	if t.EntryFeeMinor == 0 || s.links == nil {
		return nil // a free arena has nothing to win
	}
	var entrants []string
	if err := tx.NewSelect().Model((*entrant)(nil)).Column("user_id").Where("tournament_id = ?", t.ID).Scan(ctx, &entrants); err != nil {
		return fmt.Errorf("read the entrants of tournament %s: %w", t.ID, err)
	}
	return s.links.CheckEntrant(ctx, tx, userID, entrants)
}

// lockFee moves an entry fee from the player's available balance to their
// locked balance (INSUFFICIENT_FUNDS when it does not cover it, naming
// both amounts as stakes do).
func (s *Service) lockFee(ctx context.Context, tx db.Tx, t Tournament, userID, ref string, now time.Time) error {
	var available int64
	err := tx.QueryRowContext(ctx, "SELECT balance FROM ledger_accounts WHERE id = ? FOR UPDATE", money.Available(userID)).Scan(&available)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read the balance of %s: %w", userID, err)
	}
	if available < t.EntryFeeMinor {
		return domain.Errorf(domain.CodeInsufficientFunds, "the entry fee is %s USDC and your available balance is %s USDC",
			money.FormatUSDC(t.EntryFeeMinor), money.FormatUSDC(available)).With("neededMinor", t.EntryFeeMinor).With("availableMinor", available)
	}
	if _, err := money.Post(ctx, tx, s.tell, money.Posting{Kind: KindEntry, Reference: ref, At: now,
		Entries: []money.Entry{{Account: money.Available(userID), Amount: -t.EntryFeeMinor}, {Account: money.Locked(userID), Amount: t.EntryFeeMinor}}}); err != nil {
		return fmt.Errorf("lock the entry fee of %s in tournament %s: %w", userID, t.ID, err)
	}
	return money.RecordActivity(ctx, tx, money.Activity{UserID: userID, Kind: historyEntry, AmountMinor: -t.EntryFeeMinor,
		Counterparty: "tournament " + t.Name}, now)
}

// Withdraw takes userID out of a tournament: before the start the entry
// is refunded and the player leaves; after it the player is paused (in the
// standings, their entry in the pool, not paired until they join again).
// Withdrawing while paused answers the entry unchanged. Errors:
// NOT_FOUND; CONFLICT when the tournament is over or the user is not in
// it.
func (s *Service) Withdraw(ctx context.Context, userID, id string) (Entry, error) {
	var out Entry
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		t, err := s.lock(ctx, tx, id)
		if err != nil {
			return err
		}
		if t.Status == StatusFinished || t.Status == StatusCancelled {
			return domain.Errorf(domain.CodeConflict, "the tournament is %s", t.Status)
		}
		var e entrant
		err = tx.NewSelect().Model(&e).Where("tournament_id = ? AND user_id = ?", t.ID, userID).For("UPDATE").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.CodeConflict, "you are not in this tournament")
		}
		if err != nil {
			return fmt.Errorf("read the entry of %s in tournament %s: %w", userID, t.ID, err)
		}
		now := s.now()
		out = Entry{TournamentID: t.ID, UserID: userID, Status: EntryPaused}
		switch {
		case t.Status == StatusRunning && e.Paused:
			out.Tournament = t
			return nil
		case t.Status == StatusRunning:
			if err := s.pause(ctx, tx, e); err != nil {
				return err
			}
		default:
			out.Status = EntryWithdrawn
			if e.EntryRef != nil && e.FeeMinor > 0 {
				if err := s.refund(ctx, tx, t, []entrant{e}, now); err != nil {
					return err
				}
				out.RefundedMinor = e.FeeMinor
			}
			if _, err := tx.NewDelete().Model(&e).WherePK().Exec(ctx); err != nil {
				return fmt.Errorf("take %s out of tournament %s: %w", userID, t.ID, err)
			}
			t.PlayerCount--
			t.PrizePoolMinor -= e.FeeMinor
		}
		t.ChangedAt = now
		if _, err := tx.NewUpdate().Model(&t).Column("player_count", "pool_minor", "changed_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("count the withdrawal from tournament %s: %w", t.ID, err)
		}
		out.Tournament = t
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("withdraw from tournament %s: %w", id, err)
	}
	return out, nil
}

// Pause stops pairing userID in a tournament until Resume (or Join): a
// game they are playing is not touched (play it out or resign it).
// Pausing while paused answers the entry unchanged. Errors: NOT_FOUND;
// CONFLICT when the tournament is over or the user is not in it.
func (s *Service) Pause(ctx context.Context, userID, id string) (Entry, error) {
	return s.setPaused(ctx, userID, id, true)
}

// Resume has a paused entrant paired again. Resuming while not paused
// answers the entry unchanged. Errors: NOT_FOUND; CONFLICT when the
// tournament is over or the user is not in it (Join enters it);
// AGENTS_NOT_ALLOWED for a bot account in an arena for people.
func (s *Service) Resume(ctx context.Context, userID, id string) (Entry, error) {
	return s.setPaused(ctx, userID, id, false)
}

func (s *Service) setPaused(ctx context.Context, userID, id string, pause bool) (Entry, error) {
	var out Entry
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		t, err := s.lock(ctx, tx, id)
		if err != nil {
			return err
		}
		now := s.now()
		if t.Status == StatusFinished || t.Status == StatusCancelled || !now.Before(t.EndsAt) {
			return domain.Errorf(domain.CodeConflict, "the tournament is over")
		}
		var e entrant
		err = tx.NewSelect().Model(&e).Where("tournament_id = ? AND user_id = ?", t.ID, userID).For("UPDATE").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.CodeConflict, "you are not in this tournament")
		}
		if err != nil {
			return fmt.Errorf("read the entry of %s in tournament %s: %w", userID, t.ID, err)
		}
		out = Entry{TournamentID: t.ID, UserID: userID, Status: EntryJoined, Tournament: t}
		if pause {
			out.Status = EntryPaused
		}
		if e.Paused == pause {
			return nil
		}
		if pause {
			err = s.pause(ctx, tx, e)
		} else {
			err = s.unpause(ctx, tx, t, e, now)
		}
		if err != nil {
			return err
		}
		t.ChangedAt = now
		_, err = tx.NewUpdate().Model(&t).Column("changed_at").WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("pause or resume in tournament %s: %w", id, err)
	}
	return out, nil
}

// pause stops pairing an entrant; their game in progress goes on.
func (s *Service) pause(ctx context.Context, tx db.Tx, e entrant) error {
	if _, err := tx.NewUpdate().Model(&e).Set("paused = true, paused_reason = ?, waiting_since = NULL", PausedByPlayer).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("pause %s in tournament %s: %w", e.UserID, e.TournamentID, err)
	}
	return nil
}

// unpause has a paused entrant paired again (a bot account not in an
// arena for people), their games lost on time in a row forgotten.
func (s *Service) unpause(ctx context.Context, tx db.Tx, t Tournament, e entrant, now time.Time) error {
	if err := s.checkAgents(ctx, tx, t, e.UserID); err != nil {
		return err // declared a bot since it entered
	}
	if _, err := tx.NewUpdate().Model(&e).Set("paused = false, paused_reason = NULL, time_losses = 0, waiting_since = ?", now).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("resume %s in tournament %s: %w", e.UserID, t.ID, err)
	}
	return nil
}

// BerserkAnswer is what going berserk answers.
type BerserkAnswer struct {
	TournamentID string `json:"tournamentId"`
	GameID       string `json:"gameId" doc:"the game in which your time halved"`
	Seq          int    `json:"seq" doc:"the game's game:berserk event"`
}

// Berserk halves userID's time in their current game of a tournament
// (gameID, when not "", must be it), before their first move of it, for
// BerserkBonus more on a win (see BerserkMinimum). Errors: NOT_FOUND;
// CONFLICT when the user is not playing a game of it now (or gameID is
// not that game), moved already, went berserk already, or it is too late
// or the rounds too short to halve.
func (s *Service) Berserk(ctx context.Context, userID, id, gameID string) (BerserkAnswer, error) {
	id, ok := domain.CanonicalID(id)
	if !ok {
		return BerserkAnswer{}, errNoTournament
	}
	var game *string
	err := s.db.NewSelect().TableExpr("tournaments AS t").Join("LEFT JOIN tournament_players AS p ON p.tournament_id = t.id AND p.user_id = ?", userID).
		ColumnExpr("p.current_game").Where("t.id = ?", id).Scan(ctx, &game)
	if errors.Is(err, sql.ErrNoRows) {
		return BerserkAnswer{}, errNoTournament
	}
	if err != nil {
		return BerserkAnswer{}, fmt.Errorf("read the game of %s in tournament %s: %w", userID, id, err)
	}
	if game == nil || (gameID != "" && *game != gameID) {
		return BerserkAnswer{}, domain.Errorf(domain.CodeConflict, "you are not playing this game of the arena now")
	}
	r, err := s.games.Berserk(ctx, userID, *game)
	if err != nil {
		return BerserkAnswer{}, err
	}
	return BerserkAnswer{TournamentID: id, GameID: *game, Seq: r.Seq}, nil
}

// refund gives entries their fees back, in one ledger transaction per
// entry keyed by the entry (so that an entry is refunded once), with a
// line in each player's wallet history.
func (s *Service) refund(ctx context.Context, tx db.Tx, t Tournament, es []entrant, now time.Time) error {
	var ps []money.Posting
	for _, e := range es {
		if e.EntryRef == nil || e.FeeMinor == 0 {
			continue
		}
		ps = append(ps, money.Posting{Kind: KindRefund, Reference: "refund:" + *e.EntryRef, At: now,
			Entries: []money.Entry{{Account: money.Locked(e.UserID), Amount: -e.FeeMinor}, {Account: money.Available(e.UserID), Amount: e.FeeMinor}}})
	}
	if len(ps) == 0 {
		return nil
	}
	if _, err := money.PostAll(ctx, tx, s.tell, ps); err != nil {
		return fmt.Errorf("refund entries of tournament %s: %w", t.ID, err)
	}
	for _, e := range es {
		if e.FeeMinor > 0 && e.EntryRef != nil {
			if err := money.RecordActivity(ctx, tx, money.Activity{UserID: e.UserID, Kind: historyRefund, AmountMinor: e.FeeMinor,
				Counterparty: "tournament " + t.Name}, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// TopGame returns the game of the best placed player who is playing in
// the running tournament with the most players ("" when none): what TV
// shows while an arena runs.
func (s *Service) TopGame(ctx context.Context) (string, error) {
	var ids []string
	err := s.db.NewSelect().TableExpr("tournaments AS t").Join("JOIN tournament_players AS p ON p.tournament_id = t.id").
		Join("JOIN games AS g ON g.id = p.current_game AND g.status = 'active'").
		ColumnExpr("g.id").Where("t.status = ?", StatusRunning).
		OrderExpr("t.player_count DESC, t.id, p.score DESC").Limit(1).Scan(ctx, &ids)
	if err != nil {
		return "", fmt.Errorf("find the top game of the running tournaments: %w", err)
	}
	if len(ids) == 0 {
		return "", nil
	}
	return ids[0], nil
}
