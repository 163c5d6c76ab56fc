// Package chain is the Solana adapter: the RPC client path used in every
// mode, transaction builders, confirmation by polling, escrow keys, and the
// embedded local chain.
package chain
