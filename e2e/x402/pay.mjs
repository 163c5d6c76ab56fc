// Pays the platform's HTTP 402 challenges with the official x402 V2
// TypeScript client, unchanged: @x402/fetch's wrapFetchWithPayment over an
// x402Client with @x402/svm's ExactSvmScheme (the Solana "exact" signer).
//
// Usage: node e2e/x402/pay.mjs <url> <count>
// Environment: X402_PAYER_SECRET (JSON array of the payer's 64-byte
// Solana secret key), X402_RPC_URL (Solana JSON-RPC of the chain the
// payment settles on), X402_HEADERS (JSON object of extra request headers),
// X402_ALLOW_ASSET and X402_MAX_AMOUNT (optional: a token the payer agrees
// to pay in besides the client's default assets, and the most it pays per
// request, in atomic units).
//
// It calls <url> <count> times and prints one JSON line per call:
// {"call", "status", "paymentResponse" (decoded PAYMENT-RESPONSE or null),
// "body"}, then "done". Failures print {"call", "error"} and exit 1.
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { createKeyPairSignerFromBytes } from "@solana/kit";

const [url, countArg] = process.argv.slice(2);
const count = Number(countArg || "1");
if (!url || !Number.isInteger(count) || count < 1) {
  console.error("usage: node e2e/x402/pay.mjs <url> <count>");
  process.exit(2);
}
const secret = Uint8Array.from(JSON.parse(process.env.X402_PAYER_SECRET));
const rpcUrl = process.env.X402_RPC_URL;
const headers = JSON.parse(process.env.X402_HEADERS || "{}");

const signer = await createKeyPairSignerFromBytes(secret);
const client = new x402Client();
// registerExactSvmScheme(client, { signer }) would build the scheme without
// an RPC URL (public devnet); the scheme's own constructor takes one.
client.register("solana:*", new ExactSvmScheme(signer, { rpcUrl }));
// The client's spend controls pay only in its default assets (Circle's
// USDC on the public clusters) unless the payer allows another token: the
// embedded chain has its own USDC mint.
if (process.env.X402_ALLOW_ASSET) {
  client.setSpendControls({
    allowedAssets: [{
      network: "solana:*",
      asset: process.env.X402_ALLOW_ASSET,
      maxAmountPerPayment: process.env.X402_MAX_AMOUNT,
    }],
  });
}
const fetchWithPayment = wrapFetchWithPayment(fetch, client);

for (let call = 1; call <= count; call++) {
  try {
    const res = await fetchWithPayment(url, { headers });
    const header = res.headers.get("PAYMENT-RESPONSE");
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    console.log(JSON.stringify({
      call,
      status: res.status,
      paymentResponse: header ? decodePaymentResponseHeader(header) : null,
      body,
    }));
  } catch (err) {
    console.log(JSON.stringify({ call, error: String(err && err.stack ? err.stack : err) }));
    process.exitCode = 1;
    break;
  }
}
if (!process.exitCode) console.log("done");
