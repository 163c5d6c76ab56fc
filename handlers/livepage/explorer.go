package livepage

import "net/url"

// Explorer links transactions and addresses to the Solana Explorer on the
// server's cluster.
type Explorer struct {
	ChainID   string // localnet, devnet, testnet, mainnet or custom
	RPC       bool   // the embedded chain's RPC is served at /dev/solana-rpc
	PublicURL string
}

// URL links a transaction signature or an address ("tx" or "address") to
// the Solana Explorer: the embedded chain through its public RPC endpoint,
// devnet and testnet by name, mainnet plain. It is "" when there is nothing
// to link to (an unnamed cluster, or the embedded chain without its RPC
// endpoint).
func (e Explorer) URL(kind, id string) string {
	if id == "" {
		return ""
	}
	base := "https://explorer.solana.com/" + kind + "/" + url.PathEscape(id)
	switch e.ChainID {
	case "localnet":
		if !e.RPC {
			return ""
		}
		return base + "?cluster=custom&customUrl=" + url.QueryEscape(e.PublicURL+"/dev/solana-rpc")
	case "devnet", "testnet":
		return base + "?cluster=" + e.ChainID
	case "mainnet":
		return base
	}
	return ""
}
