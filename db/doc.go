// Package db opens PostgreSQL through bun (pgdialect over pgx), applies the
// embedded migrations, runs transactions with retry, and listens for
// notifications.
//
// # Isolation policy
//
// Every transaction runs at READ COMMITTED (Transact). Its guarantees come
// from row locks and constraints, not from the isolation level: a service
// that reads a row and then writes what depends on it takes the row with
// SELECT ... FOR UPDATE first (a game before a move or its settlement, an
// intent before its confirmation, a ledger account before a debit), and
// whatever must happen once is keyed by a unique constraint (a ledger
// transaction by its reference, such as a Solana signature; a settlement by
// its game; a donation by its signature). The ledger's own triggers refuse
// entries that do not sum to zero, edits, deletions and overdrafts of user
// accounts, so a bug fails a transaction instead of corrupting the books.
//
// Locks are taken in one order, to keep deadlocks rare (Transact retries
// the ones that happen):
//
//  1. a user's advisory lock of chat messages, challenges sent, support
//     tickets or arenas created (then the advisory lock of all arenas'
//     creation), or the deadline worker's row;
//  2. the rows that say who takes part: an intent, queue entries
//     (user_presence), a challenge, game rows (a market's with its game),
//     a tournament's row;
//  3. player protection's locks of those users, in user id order
//     (protection.lockPlayers), taken as their rules are read;
//  4. ledger accounts, in id order.
//
// Every path that puts money in follows it: a queue join (its entries, the
// players' protection, their balances), a challenge or rematch, a paid
// arena entry, a market batch (the game, the buyers' protection, every
// balance it may move), a bet as it lands (the intent, the game) and a
// deposit, donation, tip or bet as it is first sent (the intent). A
// time-out or self-exclusion follows it too: it locks the player's staked
// queue entries and the games of their open buys before it takes the
// player's lock, then ends them (their balances move last). Ledger
// postings lock their accounts in id order (money.PostAll), so two
// postings of one user's accounts in opposite directions queue.
// The player's lock orders an exclusion against money in: whatever
// waited for it reads the exclusion, and reads the clock only then.
//
// Work that belongs to the world outside the database, such as publishing
// live events or calling the Solana RPC, never runs inside a transaction:
// it is registered with AfterCommit, or done before the transaction that
// records its outcome.
//
// # The transaction is a value
//
// Transact hands its function a Tx: the bun.Tx for the statements it runs
// itself, and what the transaction carries besides, its queued writes
// (Tx.Later, Tx.Flush, Tx.QueryAndFlush), its work after the commit
// (Tx.AfterCommit) and each package's values of it (Local). A function
// that takes part in a transaction takes the Tx as an argument, so its
// signature says so, and none of it travels in a context.Context: a
// function that queues a write or publishes after the commit cannot be
// called outside a transaction of Transact by mistake (the zero Tx, the
// only other one, answers ErrNoTransaction).
//
// # Batched writes
//
// Two writes are frequent enough that a commit each would be most of
// their cost, so an instance takes together those that arrive while
// earlier ones run, through a Batcher (batch.go): at most one batch per
// key in flight, later items of the key queued in order, a time limit per
// batch that no caller's cancellation ends (a batch carries other
// callers' items; a caller who leaves gets its context's error, and its
// item may still be written), and a panic failing only its own batch.
// The domain code keeps what a batch does with its items:
//
//   - The compare-and-set step (game.Service.appendStep): a move that does not
//     end its game is stored outside any transaction, as one statement
//     that updates the game's row and inserts its events only if the
//     game's seq is still the one the move was computed from. Steps of
//     different games, one per game, share the statement; a game whose
//     row a transaction holds is passed over (SKIP LOCKED), not waited
//     for. A step not stored (the game moved on, or was held) is computed
//     again, or run in a transaction that locks the game (a move that ends
//     the game always is: it settles).
//   - The shared transaction (market.Service.Place): the orders of one
//     market that arrive together are matched one after another in one
//     transaction that takes the market's lock and the balances it may
//     move (in one order, like every lock above). Each order is answered
//     on its own: one refused for its own reasons changes nothing and does
//     not fail the others, and a transaction whose every order was refused
//     is rolled back.
//
// # Reads first, writes together
//
// A transaction that reads much and writes much, such as a game's end,
// costs a round trip (and a parse, a plan and a wait) per statement, so
// it reads first and writes together, with the same guarantees. Its
// reads run first: the locks that order it (the game's row, then ratings
// or ledger accounts) are taken by them, in the order above, and what
// depends on a lock is read in a later statement than the one that took
// it, since a statement that waited for a lock still reads from the
// snapshot it started with. Several services' reads go in one statement
// (Reads): each adds its columns, and a locking upsert among them returns
// the rows it locked. What the transaction then writes without reading it
// back, each service queues with Later; the queued writes are sent in one
// round trip, in the order queued, with the transaction's last statement
// (QueryAndFlush) or just before its COMMIT, and an error
// of any of them fails the transaction as any statement's would. Ids a
// queued insert needs are drawn by the reads (nextval), and counts it
// would change are read there too. Writes that may fail for a reason the
// caller must tell apart (an overdraft) or whose result is read (a
// unique constraint that decides whether something happened once) still
// run as statements of their own.
//
// # Prepared statements
//
// bun writes a statement's arguments into its text, so PostgreSQL parses
// and plans every statement anew; for a small statement the plan costs
// more than the execution. The few statements run for every move, join
// and game (a move's step, a free lobby's join, a game's start, a game's
// lock) are written with $1, $2... placeholders instead and run through
// QueryPrepared: prepared once per connection, planned once, their
// arguments sent apart. Their text must not depend on the data (a batch
// passes arrays through unnest), and the hooks that must see them are
// added with AddQueryHook or WithQueryHook. The statement of a Reads is
// prepared too, one for each combination of parts (a game's end reads
// with the same parts every time): its parts number their ? placeholders
// in order. The queued writes (Later) and the last statement that carries
// them (QueryAndFlush) are prepared statements too, with ? placeholders:
// a transaction of Transact holds its connection, on which they go as one
// pipeline of the extended protocol (pgconn's Batch of bound statements,
// one Sync), which PostgreSQL runs in order, stopping at the first error.
// A game's end no longer parses and plans its half dozen writes every
// time (about a millisecond of planning per game, by pg_stat_statements).
// A prepared statement's plan is generic, made without its arguments'
// values, so what it reads must be reached by keys whatever the tables
// hold: a read whose plan could look rows up by another index than their
// key (a user's last games, by the index of their status, say) reads them
// by key in a subquery the planner may not flatten (OFFSET 0).
package db
