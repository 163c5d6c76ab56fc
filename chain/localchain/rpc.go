package localchain

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"

	"wager/chain"
)

// maxRentEpoch is what Solana reports as the rent epoch of rent-exempt
// accounts (u64::MAX); it does not fit a float, so it is written verbatim.
const maxRentEpoch = json.Number("18446744073709551615")

type rpcRequest struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

// ServeHTTP answers Solana JSON-RPC requests (single or batched).
func (c *Chain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "JSON-RPC needs POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		json.NewEncoder(w).Encode(rpcResponse{JSONRPC: "2.0", Error: &rpcError{Code: -32700, Message: "Parse error"}, ID: json.RawMessage("null")})
		return
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var reqs []rpcRequest
		if err := json.Unmarshal(trimmed, &reqs); err != nil {
			json.NewEncoder(w).Encode(rpcResponse{JSONRPC: "2.0", Error: &rpcError{Code: -32700, Message: "Parse error"}, ID: json.RawMessage("null")})
			return
		}
		out := make([]rpcResponse, len(reqs))
		for i, req := range reqs {
			out[i] = c.handle(r.Context(), req)
		}
		json.NewEncoder(w).Encode(out)
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(trimmed, &req); err != nil {
		json.NewEncoder(w).Encode(rpcResponse{JSONRPC: "2.0", Error: &rpcError{Code: -32700, Message: "Parse error"}, ID: json.RawMessage("null")})
		return
	}
	json.NewEncoder(w).Encode(c.handle(r.Context(), req))
}

func (c *Chain) handle(ctx context.Context, req rpcRequest) rpcResponse {
	resp := rpcResponse{JSONRPC: "2.0", ID: req.ID}
	if len(resp.ID) == 0 {
		resp.ID = json.RawMessage("null")
	}
	result, err := c.call(ctx, req.Method, req.Params)
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			// What went wrong inside (a database error) is not the caller's
			// to read.
			re = &rpcError{Code: -32603, Message: "Internal error"}
		}
		resp.Error = re
		return resp
	}
	if result == nil {
		// A null answer (getTransaction of an unknown signature) is
		// written out, not left out: the envelope always has a result.
		result = json.RawMessage("null")
	}
	resp.Result = result
	return resp
}

func invalidParams(format string, args ...any) error {
	return &rpcError{Code: -32602, Message: "Invalid params: " + fmt.Sprintf(format, args...)}
}

func param[T any](params []json.RawMessage, i int) (T, error) {
	var v T
	if i >= len(params) {
		return v, invalidParams("missing parameter %d", i)
	}
	if err := json.Unmarshal(params[i], &v); err != nil {
		return v, invalidParams("parameter %d: %v", i, err)
	}
	return v, nil
}

func pubkeyParam(params []json.RawMessage, i int) (solana.PublicKey, error) {
	s, err := param[string](params, i)
	if err != nil {
		return solana.PublicKey{}, err
	}
	pk, err := solana.PublicKeyFromBase58(s)
	if err != nil {
		return solana.PublicKey{}, invalidParams("invalid address %q", s)
	}
	return pk, nil
}

func (c *Chain) withContext(ctx context.Context, value any) (any, error) {
	slot, err := c.Slot(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"context": map[string]any{"slot": slot}, "value": value}, nil
}

func (c *Chain) call(ctx context.Context, method string, params []json.RawMessage) (any, error) {
	switch method {
	case "getHealth":
		return "ok", nil
	case "getVersion":
		return map[string]any{"solana-core": "2.2.0-wager-localchain", "feature-set": 0}, nil
	case "getSlot":
		return c.Slot(ctx)
	case "getBlockHeight":
		return c.heightAt(commitmentOf(params, 0)), nil
	case "getLatestBlockhash":
		return c.rpcLatestBlockhash(ctx, params)
	case "isBlockhashValid":
		h, err := param[string](params, 0)
		if err != nil {
			return nil, err
		}
		ok, err := c.BlockhashValid(ctx, h)
		if err != nil {
			return nil, err
		}
		return c.withContext(ctx, ok)
	case "getMinimumBalanceForRentExemption":
		size, err := param[uint64](params, 0)
		if err != nil {
			return nil, err
		}
		return RentExempt(size), nil
	case "sendTransaction":
		return c.rpcSendTransaction(ctx, params)
	case "simulateTransaction":
		return c.rpcSimulateTransaction(ctx, params)
	case "getRecentPrioritizationFees":
		return c.rpcRecentPrioritizationFees(ctx, params)
	case "getSignatureStatuses":
		return c.rpcSignatureStatuses(ctx, params)
	case "getTransaction":
		return c.rpcTransaction(ctx, params)
	case "getBalance":
		addr, err := pubkeyParam(params, 0)
		if err != nil {
			return nil, err
		}
		acc, _, err := c.accountInfo(ctx, addr)
		if err != nil {
			return nil, err
		}
		return c.withContext(ctx, acc.Lamports)
	case "getAccountInfo":
		addr, err := pubkeyParam(params, 0)
		if err != nil {
			return nil, err
		}
		acc, data, err := c.accountInfo(ctx, addr)
		if err != nil {
			return nil, err
		}
		if acc.Address == "" {
			return c.withContext(ctx, nil)
		}
		return c.withContext(ctx, map[string]any{
			"lamports": acc.Lamports, "owner": acc.Owner, "executable": false, "rentEpoch": maxRentEpoch,
			"data": []string{base64.StdEncoding.EncodeToString(data), "base64"}, "space": len(data),
		})
	case "getTokenAccountBalance":
		addr, err := pubkeyParam(params, 0)
		if err != nil {
			return nil, err
		}
		var t tokenRow
		ok, err := one(ctx, c.db.NewSelect().Where("address = ?", addr.String()), &t)
		if err != nil {
			return nil, fmt.Errorf("read token account %s: %w", addr, err)
		}
		if !ok {
			return nil, invalidParams("could not find account")
		}
		ui := float64(t.Amount) / math.Pow10(chain.USDCDecimals)
		return c.withContext(ctx, map[string]any{"amount": strconv.FormatInt(t.Amount, 10), "decimals": chain.USDCDecimals,
			"uiAmount": ui, "uiAmountString": strconv.FormatFloat(ui, 'f', -1, 64)})
	case "requestAirdrop":
		addr, err := pubkeyParam(params, 0)
		if err != nil {
			return nil, err
		}
		lamports, err := param[uint64](params, 1)
		if err != nil {
			return nil, err
		}
		if lamports == 0 || lamports > MaxAirdrop {
			return nil, invalidParams("lamports must be from 1 to %d", uint64(MaxAirdrop))
		}
		sig, err := c.Airdrop(ctx, addr, lamports)
		if err != nil {
			return nil, err
		}
		return sig.String(), nil
	}
	return nil, &rpcError{Code: -32601, Message: "Method not found"}
}

// txOpts are the options of sendTransaction and simulateTransaction that
// the chain reads.
type txOpts struct {
	Encoding               string `json:"encoding"`
	SigVerify              bool   `json:"sigVerify"`
	ReplaceRecentBlockhash bool   `json:"replaceRecentBlockhash"`
}

// wireParams decodes a transaction parameter and its options.
func wireParams(params []json.RawMessage) ([]byte, txOpts, error) {
	encoded, err := param[string](params, 0)
	if err != nil {
		return nil, txOpts{}, err
	}
	opts := txOpts{Encoding: "base58"}
	if len(params) > 1 {
		if err := json.Unmarshal(params[1], &opts); err != nil {
			return nil, opts, invalidParams("parameter 1: %v", err)
		}
	}
	var raw []byte
	if opts.Encoding == "base64" {
		raw, err = base64.StdEncoding.DecodeString(encoded)
	} else {
		raw, err = base58.Decode(encoded)
	}
	if err != nil {
		return nil, opts, invalidParams("transaction is not valid %s", opts.Encoding)
	}
	return raw, opts, nil
}

// rpcSimulateTransaction runs the transaction as it is: its own blockhash
// (replaceRecentBlockhash is refused: the platform measures the exact
// message), signatures checked only with sigVerify.
func (c *Chain) rpcSimulateTransaction(ctx context.Context, params []json.RawMessage) (any, error) {
	raw, opts, err := wireParams(params)
	if err != nil {
		return nil, err
	}
	if opts.ReplaceRecentBlockhash {
		return nil, invalidParams("replaceRecentBlockhash is not supported by the local chain")
	}
	sim, err := c.Simulate(ctx, raw, opts.SigVerify)
	if err != nil {
		return nil, err
	}
	var simErr any
	if sim.Err != nil {
		simErr = *sim.Err
	}
	return c.withContext(ctx, map[string]any{"err": simErr, "logs": sim.Logs, "accounts": nil,
		"unitsConsumed": sim.Units, "returnData": nil})
}

func (c *Chain) rpcSendTransaction(ctx context.Context, params []json.RawMessage) (any, error) {
	raw, _, err := wireParams(params)
	if err != nil {
		return nil, err
	}
	sig, err := c.SendTransaction(ctx, raw)
	if err != nil {
		return nil, err
	}
	return sig.String(), nil
}

// accountInfo returns an account and its data as the chain stores it (an
// empty row when it does not exist).
func (c *Chain) accountInfo(ctx context.Context, addr solana.PublicKey) (accountRow, []byte, error) {
	var acc accountRow
	ok, err := one(ctx, c.db.NewSelect().Where("address = ?", addr.String()), &acc)
	if err != nil {
		return accountRow{}, nil, fmt.Errorf("read account %s: %w", addr, err)
	}
	if !ok {
		return accountRow{}, nil, nil
	}
	var m mintRow
	if ok, err := one(ctx, c.db.NewSelect().Where("address = ?", acc.Address), &m); err != nil {
		return acc, nil, fmt.Errorf("read mint %s: %w", addr, err)
	} else if ok {
		return acc, packMint(m), nil
	}
	var t tokenRow
	if ok, err := one(ctx, c.db.NewSelect().Where("address = ?", acc.Address), &t); err != nil {
		return acc, nil, fmt.Errorf("read token account %s: %w", addr, err)
	} else if ok {
		return acc, packTokenAccount(t), nil
	}
	return acc, []byte{}, nil
}

// Transport is an in-process HTTP transport to the chain's JSON-RPC, for
// solana-go's client: no socket, same bytes.
type Transport struct{ Chain *Chain }

// Do serves req with the chain's handler.
func (t Transport) Do(req *http.Request) (*http.Response, error) {
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	t.Chain.ServeHTTP(rec, req)
	return &http.Response{StatusCode: rec.status, Status: http.StatusText(rec.status), Header: rec.header,
		Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req, Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1}, nil
}

// CloseIdleConnections does nothing: there are no connections.
func (Transport) CloseIdleConnections() {}

type recorder struct {
	header http.Header
	body   bytes.Buffer
	status int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }

// commitmentOf reads the commitment of a call's configuration object at
// position i ("" when there is none).
func commitmentOf(params []json.RawMessage, i int) string {
	var cfg struct {
		Commitment string `json:"commitment"`
	}
	if len(params) <= i || json.Unmarshal(params[i], &cfg) != nil {
		return ""
	}
	return cfg.Commitment
}

// heightAt is the block height at a commitment: at finalized it is
// FinalizeSlots behind, as statuses are.
func (c *Chain) heightAt(commitment string) uint64 {
	if commitment == "finalized" {
		return max(c.BlockHeight(), uint64(c.FinalizeSlots)) - uint64(c.FinalizeSlots)
	}
	return c.BlockHeight()
}

// rpcLatestBlockhash answers getLatestBlockhash. At finalized the last
// valid height follows the finalized height; the hash is the newest all the
// same (nothing builds on a finalized one here).
func (c *Chain) rpcLatestBlockhash(ctx context.Context, params []json.RawMessage) (any, error) {
	h, lastValid, err := c.LatestBlockhash(ctx)
	if err != nil {
		return nil, err
	}
	if commitmentOf(params, 0) == "finalized" {
		lastValid = c.heightAt("finalized") + chain.BlockhashValidity
	}
	return c.withContext(ctx, map[string]any{"blockhash": h.String(), "lastValidBlockHeight": lastValid})
}

// rpcRecentPrioritizationFees answers getRecentPrioritizationFees.
func (c *Chain) rpcRecentPrioritizationFees(ctx context.Context, params []json.RawMessage) (any, error) {
	var accounts []string
	if len(params) > 0 {
		keys, err := param[[]string](params, 0)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			pk, err := solana.PublicKeyFromBase58(k)
			if err != nil {
				return nil, invalidParams("invalid address %q", k)
			}
			accounts = append(accounts, pk.String())
		}
	}
	if len(accounts) > 128 {
		return nil, invalidParams("too many accounts provided; max 128")
	}
	return c.RecentPrioritizationFees(ctx, accounts)
}

// rpcSignatureStatuses answers getSignatureStatuses.
func (c *Chain) rpcSignatureStatuses(ctx context.Context, params []json.RawMessage) (any, error) {
	sigs, err := param[[]string](params, 0)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(sigs))
	for i, sig := range sigs {
		slot, finalized, ok, err := c.SignatureStatus(ctx, sig)
		if err != nil {
			return nil, err
		}
		if ok {
			status := "confirmed"
			if finalized {
				status = "finalized"
			}
			out[i] = map[string]any{"slot": slot, "confirmations": nil, "err": nil,
				"confirmationStatus": status, "status": map[string]any{"Ok": nil}}
		}
	}
	return c.withContext(ctx, out)
}
