// Package e2e holds the end-to-end tests: Playwright in Debian's Chromium
// against the whole server, and the LiteSVM local validator that proves
// real Solana programs accept the transactions the server builds.
package e2e
