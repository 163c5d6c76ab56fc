// Package x402 is the platform's fair-use economy for agent traffic:
// rolling-window request counters per caller and endpoint in PostgreSQL,
// and HTTP 402 payments in the x402 version 2 protocol with the Solana
// "exact" scheme, either prepared and submitted through the platform's
// intents or presented by a standard x402 client as its own partially
// signed transaction and settled inline (the platform is its own
// facilitator). Every payment lands in the vault on chain and is credited
// to the treasury in the ledger, and serves exactly one request.
package x402

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// X402Version is the x402 protocol version the platform speaks.
const X402Version = 2

// HTTP headers of the x402 version 2 HTTP transport.
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
)

// SchemeExact is the x402 payment scheme: an exact amount of a token.
const SchemeExact = "exact"

// CAIP-2 identifiers of the Solana clusters, as x402 names networks.
const (
	NetworkMainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	NetworkDevnet  = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	NetworkTestnet = "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"
)

// NetworkOf returns the CAIP-2 network that x402 clients are told for a
// cluster name (handlers.Config.ChainID). The official x402 Solana client
// accepts only the three public clusters, so the embedded local chain and
// custom RPC endpoints present themselves as devnet: clients must point
// their RPC URL at the platform's chain (/dev/solana-rpc) and pay in the
// asset the requirements name, which is that chain's own mint.
func NetworkOf(cluster string) string {
	switch cluster {
	case "mainnet":
		return NetworkMainnet
	case "testnet":
		return NetworkTestnet
	}
	return NetworkDevnet
}

// ResourceInfo describes the resource a payment is for.
type ResourceInfo struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ExactExtra is the scheme-specific part of Solana exact requirements.
type ExactExtra struct {
	FeePayer string `json:"feePayer" doc:"the platform's fee payer: it signs last and pays the network fee"`
}

// Requirements is one way to pay (x402 PaymentRequirements).
type Requirements struct {
	Scheme            string     `json:"scheme" doc:"exact"`
	Network           string     `json:"network" doc:"CAIP-2 id of the Solana cluster"`
	Amount            string     `json:"amount" doc:"USDC minor units, as a decimal string"`
	Asset             string     `json:"asset" doc:"the USDC mint"`
	PayTo             string     `json:"payTo" doc:"the platform vault; its associated token account receives"`
	MaxTimeoutSeconds int        `json:"maxTimeoutSeconds"`
	Extra             ExactExtra `json:"extra"`
}

// PaymentRequired is the x402 challenge of a 402 answer: the body's
// paymentRequired member and, base64-encoded, the PAYMENT-REQUIRED header.
type PaymentRequired struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error,omitempty" doc:"why payment is required, or why the presented payment was refused"`
	Resource    ResourceInfo   `json:"resource"`
	Accepts     []Requirements `json:"accepts"`
}

// ExactPayload is the scheme-specific payload of a Solana exact payment.
type ExactPayload struct {
	Transaction string `json:"transaction" doc:"base64 wire transaction, signed by the payer"`
}

// PaymentPayload is what a client sends in PAYMENT-SIGNATURE.
type PaymentPayload struct {
	X402Version int            `json:"x402Version"`
	Resource    *ResourceInfo  `json:"resource,omitempty"`
	Accepted    Requirements   `json:"accepted"`
	Payload     ExactPayload   `json:"payload"`
	Extensions  map[string]any `json:"extensions,omitempty"`
}

// SettlementResponse is the PAYMENT-RESPONSE header's content.
type SettlementResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Payer       string `json:"payer,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
}

// EncodeHeader returns v as base64 JSON, the form of every x402 header.
func EncodeHeader(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs pass through here
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeHeader reads a base64 JSON x402 header into v. It returns an error
// naming what is wrong with the header.
func DecodeHeader(header string, v any) error {
	header = strings.TrimSpace(header)
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(header); err != nil {
			return fmt.Errorf("not base64: %w", err)
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("not JSON of the expected shape: %w", err)
	}
	return nil
}

// Refusal is a payment the platform does not accept. Reason is an x402
// error code (the Solana exact facilitator's where one exists), Message
// says why for humans.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Reasons of refusals, as the x402 reference facilitator names them.
const (
	ReasonInvalidPayload       = "invalid_payload"
	ReasonUnsupportedScheme    = "invalid_exact_svm_unsupported_scheme"
	ReasonNetworkMismatch      = "invalid_exact_svm_network_mismatch"
	ReasonFeePayerNotManaged   = "invalid_exact_svm_fee_payer_not_managed_by_facilitator"
	ReasonFeePayerMismatch     = "invalid_exact_svm_fee_payer_mismatch"
	ReasonUndecodable          = "invalid_exact_svm_payload_transaction_could_not_be_decoded"
	ReasonSignatureInvalid     = "invalid_exact_svm_payload_signature_invalid"
	ReasonExcessiveSigners     = "invalid_exact_svm_payload_excessive_signers"
	ReasonInstructionsLength   = "invalid_exact_svm_payload_transaction_instructions_length"
	ReasonComputeLimit         = "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction"
	ReasonComputeLimitTooHigh  = "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high"
	ReasonComputePrice         = "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction"
	ReasonComputePriceTooHigh  = "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high"
	ReasonNoTransfer           = "invalid_exact_svm_payload_no_transfer_instruction"
	ReasonFeePayerInvolved     = "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
	ReasonMintMismatch         = "invalid_exact_svm_payload_mint_mismatch"
	ReasonRecipientMismatch    = "invalid_exact_svm_payload_recipient_mismatch"
	ReasonAmountMismatch       = "invalid_exact_svm_payload_amount_mismatch"
	ReasonUnknownInstruction   = "invalid_exact_svm_payload_unknown_optional_instruction"
	ReasonLookupTables         = "invalid_exact_svm_smart_wallet_alt_resolution_not_available"
	ReasonTransactionFailed    = "invalid_exact_svm_transaction_failed"
	ReasonDuplicateSettlement  = "duplicate_settlement"
	ReasonSettlementPending    = "settlement_pending"
	ReasonAlreadyUsed          = "payment_already_used"
	ReasonUnknownPayment       = "unknown_payment"
	ReasonResourceMismatch     = "resource_mismatch"
	ReasonPayerMismatch        = "payer_mismatch"
	ReasonRequirementsMismatch = "requirements_mismatch"
)
