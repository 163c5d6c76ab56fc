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
// Locks are taken in one order (a user's advisory lock of chat messages,
// challenges sent or support tickets, or the deadline worker's row; then
// game rows; then ledger accounts) to keep deadlocks rare; Transact
// retries the ones that happen. Work that belongs to the world outside the
// database, such as publishing live events or calling the Solana RPC,
// never runs inside a transaction: it is registered with AfterCommit, or
// done before the transaction that records its outcome.
package db
