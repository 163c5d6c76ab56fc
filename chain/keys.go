package chain

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"

	"github.com/gagliardetto/solana-go"
)

// Keys derives every platform-controlled keypair from one 32-byte master
// seed, so that backing up the seed backs up every escrow.
type Keys struct {
	seed []byte
}

// NewKeys returns the key set of a master seed.
func NewKeys(seed []byte) *Keys { return &Keys{seed: seed} }

// Derive returns the keypair for a purpose string: HMAC-SHA256(seed,
// purpose) is the ed25519 seed. Different purposes give unrelated keys.
func (k *Keys) Derive(purpose string) solana.PrivateKey {
	mac := hmac.New(sha256.New, k.seed)
	mac.Write([]byte(purpose))
	return solana.PrivateKey(ed25519.NewKeyFromSeed(mac.Sum(nil)))
}

// FeePayer pays fees and account rent for every platform transaction.
func (k *Keys) FeePayer() solana.PrivateKey { return k.Derive("fee-payer") }

// Vault owns the platform's USDC: deposits arrive in its token account and
// withdrawals and payouts leave from it. Its address is the deposit address.
func (k *Keys) Vault() solana.PrivateKey { return k.Derive("vault") }

// Escrow is the keypair of one game's escrow, which holds donations.
func (k *Keys) Escrow(gameID string) solana.PrivateKey { return k.Derive("escrow:" + gameID) }

// LocalMint is the USDC-like mint of the embedded local chain, and
// LocalMintAuthority its mint authority (the dev faucet).
func (k *Keys) LocalMint() solana.PrivateKey          { return k.Derive("local-usdc-mint") }
func (k *Keys) LocalMintAuthority() solana.PrivateKey { return k.Derive("local-usdc-mint-authority") }
