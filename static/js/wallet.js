// Wallet sign-in for the browser: an injected Solana wallet (Wallet
// Standard, or the older window.solana / window.phantom.solana providers)
// signs the server's challenge; where none exists and the server allows it,
// a built-in dev wallet (an Ed25519 key kept in localStorage, signing with
// WebCrypto) does. Calls carry this script's own X-SDK-Version.
//
// On the wallet page (/wallet) it also moves money over the JSON API with
// the session cookie: deposits (prepare, sign with the wallet the user
// signed in with, submit), withdrawals and the dev faucet.
(function () {
  "use strict";
  // Buttons that reload the page (the maintenance page's "try again"):
  // pages have no inline handlers (Content-Security-Policy).
  document.addEventListener("click", (e) => {
    if (e.target.closest && e.target.closest("[data-reload]")) location.reload();
  });
  const SDK_VERSION = "1.0.0";
  const APP_ID = "web";
  const DEV_KEY = "wager.devWallet.v1";
  const KIND_KEY = "wager.walletKind"; // "dev", "standard" or "legacy": how the user signed in
  const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  const REF_KEY = "wager.referralCode";
  const PREVIOUS_KEY = "wager.previousSignIn";

  // The first page after a sign-in says when the previous one was, so
  // that a sign-in nobody remembers is noticed.
  document.addEventListener("DOMContentLoaded", () => {
    let previous;
    try {
      previous = sessionStorage.getItem(PREVIOUS_KEY);
      sessionStorage.removeItem(PREVIOUS_KEY);
    } catch (_) { return; }
    const main = document.querySelector("main");
    if (!previous || !main) return;
    const at = new Date(previous);
    const note = document.createElement("p");
    note.setAttribute("role", "status");
    note.dataset.testid = "previous-sign-in";
    note.className = "mb-4 rounded-lg border border-slate-700 bg-slate-900 px-4 py-2 text-sm text-slate-300";
    note.textContent = previous === "first" || isNaN(at) ? "Welcome: this is the first sign-in of this account."
      : "Welcome back. Your previous sign-in was on " + at.toLocaleString(undefined, { dateStyle: "long", timeStyle: "short" }) + ".";
    main.prepend(note);
  });

  // A referral link (?ref=CODE on any page) is kept until the visitor
  // signs in, however many pages they open first; the sign-in sends it.
  // The server reads it only when the sign-in creates the account.
  try {
    const ref = new URLSearchParams(window.location.search).get("ref");
    if (ref && /^[A-Za-z0-9_-]{1,64}$/.test(ref)) localStorage.setItem(REF_KEY, ref);
  } catch (_) {}
  function referralCode() {
    try { return localStorage.getItem(REF_KEY) || undefined; } catch (_) { return undefined; }
  }

  function base58(bytes) {
    const digits = [];
    for (const byte of bytes) {
      let carry = byte;
      for (let i = 0; i < digits.length; i++) {
        carry += digits[i] * 256;
        digits[i] = carry % 58;
        carry = (carry / 58) | 0;
      }
      while (carry > 0) { digits.push(carry % 58); carry = (carry / 58) | 0; }
    }
    let out = "";
    for (const byte of bytes) { if (byte !== 0) break; out += "1"; }
    for (let i = digits.length - 1; i >= 0; i--) out += ALPHABET[digits[i]];
    return out;
  }
  function base58Decode(text) {
    const bytes = [];
    for (const ch of text) {
      let carry = ALPHABET.indexOf(ch);
      if (carry < 0) throw new Error("not a base58 string: " + text);
      for (let i = 0; i < bytes.length; i++) {
        carry += bytes[i] * 58;
        bytes[i] = carry & 0xff;
        carry >>= 8;
      }
      while (carry > 0) { bytes.push(carry & 0xff); carry >>= 8; }
    }
    for (const ch of text) { if (ch !== "1") break; bytes.push(0); }
    return new Uint8Array(bytes.reverse());
  }
  function toB64(bytes) {
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(s);
  }
  const fromB64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

  // Wallet Standard discovery: wallets announce themselves with an event.
  const standardWallets = [];
  function register(...wallets) {
    for (const w of wallets) {
      if (w.features && w.features["solana:signMessage"] && w.features["standard:connect"]) standardWallets.push(w);
    }
    return () => {};
  }
  window.addEventListener("wallet-standard:register-wallet", (e) => e.detail({ register }));
  try { window.dispatchEvent(new CustomEvent("wallet-standard:app-ready", { detail: { register } })); } catch (_) {}

  async function injectedWallet() {
    if (standardWallets.length) {
      const w = standardWallets[0];
      const { accounts } = await w.features["standard:connect"].connect();
      const account = accounts[0];
      return {
        name: w.name,
        kind: "standard",
        address: account.address,
        sign: async (msg) => {
          const [out] = await w.features["solana:signMessage"].signMessage({ account, message: msg });
          return out.signature;
        },
      };
    }
    const provider = (window.phantom && window.phantom.solana) || window.solana;
    if (provider && provider.signMessage) {
      const res = await provider.connect();
      const key = (res && res.publicKey) || provider.publicKey;
      return {
        name: provider.isPhantom ? "Phantom" : "Solana wallet",
        kind: "legacy",
        address: key.toString(),
        sign: async (msg) => {
          const out = await provider.signMessage(msg, "utf8");
          return out.signature || out;
        },
      };
    }
    return null;
  }

  // The dev wallet: created once per browser profile, kept in localStorage.
  // With create false it answers null where this browser has none.
  async function devWallet(create = true) {
    let stored = null;
    try { stored = JSON.parse(localStorage.getItem(DEV_KEY) || "null"); } catch (_) {}
    let key;
    if (stored && stored.pkcs8 && stored.address) {
      key = await crypto.subtle.importKey("pkcs8", fromB64(stored.pkcs8), { name: "Ed25519" }, false, ["sign"]);
    } else if (!create) {
      return null;
    } else {
      const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
      const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
      const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
      stored = { address: base58(raw), pkcs8: toB64(pkcs8) };
      localStorage.setItem(DEV_KEY, JSON.stringify(stored));
      key = pair.privateKey;
    }
    const signMessageBytes = async (bytes) => new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key, bytes));
    const publicKey = base58Decode(stored.address);
    return {
      name: "Dev wallet",
      kind: "dev",
      address: stored.address,
      sign: signMessageBytes,
      signMessageBytes,
      signTransaction: (wire) => signWireTransaction(wire, publicKey, signMessageBytes),
    };
  }

  // Solana wire transactions: shortvec(signature count), 64 bytes per
  // signature, then the message. The message (after a version byte with
  // the top bit set, for versioned messages) starts with a 3-byte header
  // whose first byte is the number of required signatures, then
  // shortvec(key count) and 32-byte keys; signature i belongs to key i.
  function shortvec(bytes, offset) {
    let value = 0;
    for (let size = 0; size < 3; size++) {
      const b = bytes[offset + size];
      if (b === undefined) break;
      value |= (b & 0x7f) << (7 * size);
      if ((b & 0x80) === 0) return [value, size + 1];
    }
    throw new Error("malformed transaction");
  }

  function parseWire(wire) {
    const [count, n] = shortvec(wire, 0);
    const messageStart = n + count * 64;
    const message = wire.subarray(messageStart);
    let o = message[0] & 0x80 ? 1 : 0;
    const required = message[o];
    const [keyCount, kn] = shortvec(message, o + 3);
    o += 3 + kn;
    if (message.length < o + keyCount * 32 || required > keyCount || count < required) throw new Error("malformed transaction");
    const signers = [];
    for (let i = 0; i < required; i++) signers.push(message.subarray(o + 32 * i, o + 32 * (i + 1)));
    return { signaturesStart: n, message, signers };
  }

  const sameBytes = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

  // signWireTransaction signs the message of a wire transaction with
  // signMessageBytes and puts the signature in publicKey's slot.
  async function signWireTransaction(wire, publicKey, signMessageBytes) {
    const tx = parseWire(wire);
    const slot = tx.signers.findIndex((k) => sameBytes(k, publicKey));
    if (slot < 0) throw new Error("This transaction does not ask for your wallet's signature.");
    const signature = await signMessageBytes(tx.message);
    const out = new Uint8Array(wire);
    out.set(signature, tx.signaturesStart + 64 * slot);
    return out;
  }

  // walletForSigning returns the wallet the user signed in with, able to
  // sign transactions: {name, signTransaction(wireBytes) -> wireBytes}.
  async function walletForSigning(address, chain) {
    let kind = localStorage.getItem(KIND_KEY);
    const dev = kind === "dev" || !kind ? await devWallet(false) : null;
    if (!kind) {
      const legacy = (window.phantom && window.phantom.solana) || window.solana;
      kind = dev && dev.address === address ? "dev" : !standardWallets.length && legacy ? "legacy" : "standard";
    }
    if (kind === "dev") {
      if (!dev || dev.address !== address) {
        throw new Error("This browser's dev wallet is not " + address + ". Sign in again with the wallet you use here.");
      }
      return dev;
    }
    if (kind === "standard") {
      for (const w of standardWallets) {
        const feature = w.features["solana:signTransaction"];
        if (!feature) continue;
        let account = (w.accounts || []).find((a) => a.address === address);
        if (!account) {
          const { accounts } = await w.features["standard:connect"].connect();
          account = accounts.find((a) => a.address === address);
        }
        if (!account) continue;
        return {
          name: w.name,
          kind: "standard",
          address,
          signTransaction: async (wire) => {
            const input = { account, transaction: wire };
            if (chain && ["devnet", "testnet", "mainnet"].includes(chain)) input.chain = "solana:" + chain;
            const [out] = await feature.signTransaction(input);
            return new Uint8Array(out.signedTransaction);
          },
        };
      }
      throw new Error("No wallet in this browser can sign transactions for " + address + ". Unlock the wallet you signed in with and try again.");
    }
    throw new Error("Your wallet connects through the older window.solana interface, which is not supported for deposits yet. Sign in with a Wallet Standard wallet (such as a current Phantom, Solflare or Backpack) to deposit; withdrawals work with any wallet.");
  }

  // request calls a JSON endpoint the way an SDK would (POST with a body,
  // GET without) and answers {status, data}; it throws the server's error
  // message (or a notice when this script is outdated) as an Error with
  // status and code.
  async function request(method, path, body, extraHeaders) {
    const headers = { "X-App-Id": APP_ID, "X-SDK-Version": SDK_VERSION, Accept: "application/json", ...extraHeaders };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const csrf = document.querySelector('meta[name="csrf-token"]');
    if (csrf && method !== "GET") headers["X-CSRF-Token"] = csrf.content;
    const res = await fetch(path, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await res.json().catch(() => ({}));
    if (res.ok) return { status: res.status, data };
    let message = data.message || "Request failed (" + res.status + ")";
    if (res.status === 426) message = "This page is out of date. Reload it to get the latest version.";
    else if (data.fields) {
      const details = Object.entries(data.fields).map(([k, v]) => fieldName(k) + " " + v);
      if (details.length) message = details.join("; ");
    }
    const err = new Error(message.charAt(0).toUpperCase() + message.slice(1));
    err.status = res.status;
    err.code = data.code;
    throw err;
  }
  const fieldName = (k) => ({ amountMinor: "The amount", toAddress: "The destination", toUserId: "The recipient",
    "context.id": "The chat", "context.type": "The chat", signedTransaction: "The signed transaction" }[k] || k);

  // api POSTs a JSON body and answers the JSON result.
  async function api(path, body) {
    return (await request("POST", path, body)).data;
  }

  // apiGet GETs a JSON resource with the session cookie.
  async function apiGet(path) {
    return (await request("GET", path)).data;
  }

  function setStatus(text, isError) {
    const el = document.getElementById("wallet-status");
    if (!el) return;
    el.textContent = text;
    el.className = "mt-4 min-h-[1.5rem] text-sm " + (isError ? "text-rose-400" : "text-slate-300");
  }

  async function signIn(getWallet, buttons) {
    buttons.forEach((b) => (b.disabled = true));
    try {
      setStatus("Connecting to the wallet…");
      const wallet = await getWallet();
      if (!wallet) throw new Error("No Solana wallet found in this browser. Install Phantom or another Solana wallet.");
      setStatus("Asking the server for a sign-in message…");
      const challenge = await api("/auth/handshake", { walletAddress: wallet.address });
      setStatus("Approve the sign-in request in " + wallet.name + "…");
      const signature = await wallet.sign(new TextEncoder().encode(challenge.message));
      setStatus("Checking the signature…");
      const session = await api("/session", { address: wallet.address, signedMessage: toB64(new Uint8Array(signature)), nonce: challenge.nonce,
        referralCode: referralCode() });
      try {
        localStorage.setItem(KIND_KEY, wallet.kind || "legacy");
        localStorage.removeItem(REF_KEY);
        // The next page says when the previous sign-in was.
        sessionStorage.setItem(PREVIOUS_KEY, session.previousSignInAt || "first");
      } catch (_) {}
      setStatus("Signed in. Loading…");
      const login = document.querySelector("[data-testid=login]");
      const next = (login && login.dataset.next) || "/";
      window.location.assign(next.startsWith("/") && !next.startsWith("//") ? next : "/");
    } catch (err) {
      setStatus(err && err.message ? err.message : String(err), true);
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  // parseUSDC converts a typed amount ("1.5") to minor units exactly,
  // with string arithmetic: no floating point.
  function parseUSDC(text) {
    const bad = (message) => Object.assign(new Error(message), { field: true });
    const m = /^(\d*)(?:\.(\d*))?$/.exec(String(text).trim());
    if (!m || (m[1] === "" && !m[2])) throw bad("Enter an amount in USDC, such as 1.5.");
    const frac = m[2] || "";
    if (frac.length > 6) throw bad("USDC has at most 6 decimals.");
    const minor = BigInt(m[1] || "0") * 1000000n + BigInt((frac + "000000").slice(0, 6));
    if (minor <= 0n) throw bad("Enter an amount greater than 0.");
    if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw bad("That amount is too large.");
    return Number(minor);
  }

  // formatUSDC writes minor units as USDC the way the server does (Go's
  // money.FormatUSDC): at least two decimals, six only when needed
  // ("2.50", "0.000001").
  function formatUSDC(minor) {
    const neg = Number(minor) < 0;
    const s = String(Math.abs(Number(minor))).padStart(7, "0");
    const frac = s.slice(-6).replace(/0+$/, "").padEnd(2, "0");
    return (neg ? "-" : "") + s.slice(0, -6) + "." + frac;
  }

  function randomKey() {
    return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // The wallet page: deposit, withdraw and faucet over the JSON API; after
  // each, fresh balances and history from the server replace the old ones.
  function walletPage(root) {
    const status = document.getElementById("wallet-status");
    const say = (text, state) => {
      status.textContent = text;
      if (state) status.dataset.state = state;
      else delete status.dataset.state;
    };

    async function refresh() {
      const res = await fetch(window.location.pathname + window.location.search,
        { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!res.ok) throw new Error("reload failed");
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      for (const id of ["wallet-balances", "wallet-history"]) {
        const fresh = doc.getElementById(id);
        const old = document.getElementById(id);
        if (fresh && old) old.replaceWith(document.importNode(fresh, true));
      }
    }

    // run performs one money movement at a time: every action button is
    // disabled meanwhile, progress and errors go to the status line.
    async function run(form, input, steps) {
      if (root.dataset.busy) return;
      root.dataset.busy = "true";
      const button = form && form.querySelector("button[type=submit]");
      const buttons = () => root.querySelectorAll("[data-wallet-form] button, [data-wallet-faucet]");
      buttons().forEach((b) => (b.disabled = true));
      if (form) form.setAttribute("aria-busy", "true");
      if (input) input.removeAttribute("aria-invalid");
      try {
        const done = await steps();
        try {
          await refresh();
        } catch (_) {
          say(done + " Reload the page to see your new balance.", "ok");
          return;
        }
        say(done, "ok");
      } catch (err) {
        say(err && err.message ? err.message : String(err), "error");
        if (input && (err.field || err.code === "VALIDATION_ERROR")) input.setAttribute("aria-invalid", "true");
      } finally {
        delete root.dataset.busy;
        buttons().forEach((b) => (b.disabled = false));
        if (form) form.removeAttribute("aria-busy");
        if (button && (!document.activeElement || document.activeElement === document.body)) button.focus();
      }
    }

    async function deposit(input) {
      const receipt = await depositMinor(parseUSDC(input.value));
      input.value = "";
      return "Deposited " + formatUSDC(receipt.amountMinor) + " USDC to your platform balance.";
    }

    // depositMinor moves amount from the wallet to the platform balance and
    // answers the receipt.
    async function depositMinor(amount) {
      say("Preparing…");
      const wallet = await walletForSigning(root.dataset.walletAddress, root.dataset.chain);
      const prepared = await api("/wallets/transfer/prepare", { toAddress: root.dataset.depositAddress, amountMinor: amount });
      say("Approve in your wallet…");
      const signed = await wallet.signTransaction(fromB64(prepared.transaction));
      say("Waiting for confirmation…");
      const body = { intentId: prepared.intentId, signedTransaction: toB64(signed) };
      // 503: sent, outcome not known yet; submitting again is safe.
      for (let attempt = 1; ; attempt++) {
        try {
          return await api("/wallets/transfer/submit", body);
        } catch (err) {
          if (err.status !== 503 || attempt >= 5) throw err;
          await sleep(2000);
        }
      }
    }

    async function withdraw(input) {
      const amount = parseUSDC(input.value);
      say("Waiting for confirmation…");
      const { status: code, data } = await request("POST", "/wallets/withdraw", { amountMinor: amount },
        { "Idempotency-Key": randomKey() });
      input.value = "";
      if (code === 202 || data.status === "pending") {
        return "Withdrawal of " + formatUSDC(amount) + " USDC sent; it is not confirmed yet and shows in your history once it is.";
      }
      return "Withdrew " + formatUSDC(data.amountMinor) + " USDC to your wallet.";
    }

    const FAUCET_MINOR = 100000000;

    // faucet fills the wallet on chain only and says what is next: the
    // deposit form, filled in.
    async function faucet() {
      say("Asking the faucet for test USDC…");
      await api("/dev/faucet", { address: root.dataset.walletAddress, amountMinor: FAUCET_MINOR });
      const input = root.querySelector("#deposit-amount");
      if (input) input.value = formatUSDC(FAUCET_MINOR);
      return "Added " + formatUSDC(FAUCET_MINOR) + " test USDC (and some SOL) to your wallet. " +
        "It is not in your platform balance yet: press Deposit to move it there and play for stakes.";
    }

    // faucetAndDeposit is the whole first step on the test chain: test USDC
    // into the wallet, then deposited to the platform balance.
    async function faucetAndDeposit() {
      say("Asking the faucet for test USDC…");
      await api("/dev/faucet", { address: root.dataset.walletAddress, amountMinor: FAUCET_MINOR });
      const receipt = await depositMinor(FAUCET_MINOR);
      return "Got " + formatUSDC(FAUCET_MINOR) + " test USDC and deposited " + formatUSDC(receipt.amountMinor) +
        " USDC to your platform balance: you can play for stakes now.";
    }

    root.addEventListener("submit", (e) => {
      const form = e.target.closest("[data-wallet-form]");
      if (!form) return;
      e.preventDefault();
      const input = form.querySelector("input[name=amount]");
      const action = form.dataset.walletForm === "deposit" ? deposit : withdraw;
      run(form, input, () => action(input));
    });
    root.addEventListener("click", (e) => {
      const button = e.target.closest("[data-wallet-faucet]");
      if (button) run(null, null, button.dataset.walletFaucet === "deposit" ? faucetAndDeposit : faucet);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const connect = document.querySelector("[data-wallet-connect]");
    const dev = document.querySelector("[data-wallet-dev]");
    const buttons = [connect, dev].filter(Boolean);
    if (connect) connect.addEventListener("click", () => signIn(injectedWallet, buttons));
    if (dev) dev.addEventListener("click", () => signIn(devWallet, buttons));
    const page = document.querySelector("[data-wallet-page]");
    if (page) walletPage(page);
  });

  window.wagerWallet = {
    devWallet, injectedWallet, walletForSigning, api, apiGet, request, base58, base58Decode,
    signWireTransaction, parseUSDC, formatUSDC, SDK_VERSION,
  };
})();
