package localchain

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
)

// Landed is a transaction the chain executed, as getTransaction reports it.
type Landed struct {
	Slot      uint64
	BlockTime time.Time
	Raw       []byte
	Fee       uint64
	// Logs are the log messages of its instructions; Units the compute
	// units it consumed (nil for what landed before they were kept).
	Logs  []string
	Units *uint64
	// PreBalances and PostBalances are the lamports of each account of its
	// message before and after it (empty for what landed before they were
	// kept).
	PreBalances, PostBalances []uint64
}

// Transaction returns the transaction with signature sig, or false when
// none landed with it, when it is not finalized and finalizedOnly asks for
// that, or when the signature is an airdrop's or the faucet's (they change
// balances without a transaction). It fails only when the database does.
func (c *Chain) Transaction(ctx context.Context, sig string, finalizedOnly bool) (Landed, bool, error) {
	var row txRow
	err := c.db.NewSelect().Model(&row).Where("signature = ? AND raw IS NOT NULL", sig).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Landed{}, false, nil
	}
	if err != nil {
		return Landed{}, false, fmt.Errorf("read transaction %s: %w", sig, err)
	}
	if finalizedOnly && !c.finalized(row.CreatedAt) {
		return Landed{}, false, nil
	}
	out := Landed{Slot: row.Slot, BlockTime: row.CreatedAt, Raw: row.Raw, Fee: uint64(row.Fee),
		Logs: row.Logs, PreBalances: unsigned(row.PreBalances), PostBalances: unsigned(row.PostBalances)}
	if out.Logs == nil {
		out.Logs = []string{}
	}
	if row.Units != nil {
		units := uint64(*row.Units)
		out.Units = &units
	}
	return out, true, nil
}

func unsigned(v []int64) []uint64 {
	out := make([]uint64, len(v))
	for i, n := range v {
		out[i] = uint64(n)
	}
	return out
}

// transactionConfig is getTransaction's configuration object.
type transactionConfig struct {
	Encoding                       string  `json:"encoding"`
	Commitment                     string  `json:"commitment"`
	MaxSupportedTransactionVersion *uint64 `json:"maxSupportedTransactionVersion"`
}

// transactionResult is getTransaction's answer, field for field as a
// validator's RPC writes it for the json, base58 and base64 encodings.
type transactionResult struct {
	Slot        uint64          `json:"slot"`
	Transaction any             `json:"transaction"` // uiTransaction, or [data, encoding]
	Meta        transactionMeta `json:"meta"`
	// Version is left out unless the caller said which versions it reads,
	// as the RPC does for clients that predate versioned transactions.
	Version   *txVersion `json:"version,omitempty"`
	BlockTime int64      `json:"blockTime"`
}

// transactionMeta is a transaction's status meta. Err is always null and
// Status Ok: the chain keeps only transactions that succeeded. Inner
// instructions (the calls the ATA program makes), token balances and
// rewards are not modelled: their lists are empty.
type transactionMeta struct {
	Err                  *struct{}         `json:"err"`
	Status               transactionStatus `json:"status"`
	Fee                  uint64            `json:"fee"`
	PreBalances          []uint64          `json:"preBalances"`
	PostBalances         []uint64          `json:"postBalances"`
	InnerInstructions    []struct{}        `json:"innerInstructions"`
	LogMessages          []string          `json:"logMessages"`
	PreTokenBalances     []struct{}        `json:"preTokenBalances"`
	PostTokenBalances    []struct{}        `json:"postTokenBalances"`
	Rewards              []struct{}        `json:"rewards"`
	LoadedAddresses      loadedAddresses   `json:"loadedAddresses"`
	ComputeUnitsConsumed *uint64           `json:"computeUnitsConsumed,omitempty"`
}

type transactionStatus struct {
	Ok *struct{} `json:"Ok"`
}

type loadedAddresses struct {
	Writable []string `json:"writable"`
	Readonly []string `json:"readonly"`
}

// txVersion is a transaction's version: "legacy", or its number.
type txVersion int

const legacyVersion txVersion = -1

func (v txVersion) MarshalJSON() ([]byte, error) {
	if v == legacyVersion {
		return []byte(`"legacy"`), nil
	}
	return []byte(strconv.Itoa(int(v))), nil
}

// uiTransaction is the json encoding of a transaction.
type uiTransaction struct {
	Signatures []string  `json:"signatures"`
	Message    uiMessage `json:"message"`
}

type uiMessage struct {
	Header          solana.MessageHeader `json:"header"`
	AccountKeys     []string             `json:"accountKeys"`
	RecentBlockhash string               `json:"recentBlockhash"`
	Instructions    []uiInstruction      `json:"instructions"`
	// AddressTableLookups is there for versioned messages only (empty
	// here: the chain refuses lookups).
	AddressTableLookups *[]struct{} `json:"addressTableLookups,omitempty"`
}

type uiInstruction struct {
	ProgramIDIndex uint16   `json:"programIdIndex"`
	Accounts       []uint16 `json:"accounts"`
	Data           string   `json:"data"` // base58
	// StackHeight is null for a message's own instructions.
	StackHeight *uint32 `json:"stackHeight"`
}

// rpcTransaction answers getTransaction: null for a signature that did not
// land, or not at the commitment asked (finalized unless confirmed is
// asked, as on a cluster).
func (c *Chain) rpcTransaction(ctx context.Context, params []json.RawMessage) (any, error) {
	s, err := param[string](params, 0)
	if err != nil {
		return nil, err
	}
	if sig, err := solana.SignatureFromBase58(s); err != nil || sig.IsZero() {
		return nil, invalidParams("invalid signature %q", s)
	}
	cfg := transactionConfig{Encoding: "json"}
	if len(params) > 1 {
		if err := json.Unmarshal(params[1], &cfg); err != nil {
			return nil, invalidParams("parameter 1: %v", err)
		}
	}
	var finalizedOnly bool
	switch cfg.Commitment {
	case "", "finalized":
		finalizedOnly = true
	case "confirmed":
	case "processed":
		return nil, invalidParams("Method does not support commitment below `confirmed`")
	default:
		return nil, invalidParams("unknown commitment %q", cfg.Commitment)
	}
	if cfg.Encoding == "" {
		cfg.Encoding = "json"
	}
	switch cfg.Encoding {
	case "json", "base58", "base64":
	case "jsonParsed":
		return nil, invalidParams("the jsonParsed encoding is not supported by the local chain")
	default:
		return nil, invalidParams("unknown encoding %q, expected one of base58, base64, json", cfg.Encoding)
	}
	landed, ok, err := c.Transaction(ctx, s, finalizedOnly)
	if err != nil || !ok {
		return nil, err
	}
	tx, err := solana.TransactionFromBytes(landed.Raw)
	if err != nil {
		return nil, fmt.Errorf("decode stored transaction %s: %w", s, err)
	}
	out := transactionResult{Slot: landed.Slot, BlockTime: landed.BlockTime.Unix(), Meta: transactionMeta{
		Status: transactionStatus{}, Fee: landed.Fee, PreBalances: landed.PreBalances, PostBalances: landed.PostBalances,
		InnerInstructions: []struct{}{}, LogMessages: landed.Logs, PreTokenBalances: []struct{}{},
		PostTokenBalances: []struct{}{}, Rewards: []struct{}{},
		LoadedAddresses: loadedAddresses{Writable: []string{}, Readonly: []string{}}, ComputeUnitsConsumed: landed.Units,
	}}
	version := legacyVersion
	if tx.Message.IsVersioned() {
		version = txVersion(tx.Message.GetVersion() - 1) // solana-go numbers v0 as 1
	}
	if maxVersion := cfg.MaxSupportedTransactionVersion; maxVersion != nil {
		if version != legacyVersion && uint64(version) > *maxVersion {
			return nil, unsupportedVersion(int(version))
		}
		out.Version = &version
	} else if version != legacyVersion {
		return nil, unsupportedVersion(int(version))
	}
	switch cfg.Encoding {
	case "base64":
		out.Transaction = [2]string{base64.StdEncoding.EncodeToString(landed.Raw), "base64"}
	case "base58":
		out.Transaction = [2]string{base58.Encode(landed.Raw), "base58"}
	default:
		out.Transaction = jsonTransaction(tx)
	}
	return out, nil
}

func unsupportedVersion(v int) error {
	return &rpcError{Code: -32015, Message: fmt.Sprintf("Transaction version (%d) is not supported by the requesting client. "+
		"Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": %d", v, v)}
}

// jsonTransaction is tx in the json encoding.
func jsonTransaction(tx *solana.Transaction) uiTransaction {
	msg := tx.Message
	out := uiTransaction{Signatures: make([]string, len(tx.Signatures)), Message: uiMessage{Header: msg.Header,
		AccountKeys: make([]string, len(msg.AccountKeys)), RecentBlockhash: msg.RecentBlockhash.String(),
		Instructions: make([]uiInstruction, len(msg.Instructions))}}
	for i, s := range tx.Signatures {
		out.Signatures[i] = s.String()
	}
	for i, k := range msg.AccountKeys {
		out.Message.AccountKeys[i] = k.String()
	}
	for i, ix := range msg.Instructions {
		accounts := ix.Accounts
		if accounts == nil {
			accounts = []uint16{}
		}
		out.Message.Instructions[i] = uiInstruction{ProgramIDIndex: ix.ProgramIDIndex, Accounts: accounts,
			Data: base58.Encode(ix.Data)}
	}
	if msg.IsVersioned() {
		out.Message.AddressTableLookups = &[]struct{}{}
	}
	return out
}
