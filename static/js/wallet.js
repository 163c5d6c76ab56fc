// Wallet sign-in for the browser: an injected Solana wallet (Wallet
// Standard, or the older window.solana / window.phantom.solana providers)
// signs the server's challenge; where none exists and the server allows it,
// a built-in dev wallet (an Ed25519 key kept in localStorage, signing with
// WebCrypto) does. Calls carry this script's own X-SDK-Version.
(function () {
  "use strict";
  const SDK_VERSION = "1.0.0";
  const APP_ID = "web";
  const DEV_KEY = "wager.devWallet.v1";
  const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

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
  const toB64 = (bytes) => btoa(String.fromCharCode(...bytes));
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
  async function devWallet() {
    let stored = null;
    try { stored = JSON.parse(localStorage.getItem(DEV_KEY) || "null"); } catch (_) {}
    let key;
    if (stored && stored.pkcs8 && stored.address) {
      key = await crypto.subtle.importKey("pkcs8", fromB64(stored.pkcs8), { name: "Ed25519" }, false, ["sign"]);
    } else {
      const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
      const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
      const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
      stored = { address: base58(raw), pkcs8: toB64(pkcs8) };
      localStorage.setItem(DEV_KEY, JSON.stringify(stored));
      key = pair.privateKey;
    }
    return {
      name: "Dev wallet",
      address: stored.address,
      sign: async (msg) => new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key, msg)),
    };
  }

  // api calls a JSON endpoint the way an SDK would and throws the server's
  // error message (or a notice when this script is outdated).
  async function api(path, body) {
    const headers = { "Content-Type": "application/json", "X-App-Id": APP_ID, "X-SDK-Version": SDK_VERSION };
    const csrf = document.querySelector('meta[name="csrf-token"]');
    if (csrf) headers["X-CSRF-Token"] = csrf.content;
    const res = await fetch(path, { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin" });
    const data = await res.json().catch(() => ({}));
    if (res.status === 426) {
      throw new Error("This page is out of date. Reload it to get the latest version.");
    }
    if (!res.ok) throw new Error(data.message || "Request failed (" + res.status + ")");
    return data;
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
      await api("/session", { address: wallet.address, signedMessage: toB64(new Uint8Array(signature)) });
      setStatus("Signed in. Loading…");
      const login = document.querySelector("[data-testid=login]");
      const next = (login && login.dataset.next) || "/";
      window.location.assign(next.startsWith("/") && !next.startsWith("//") ? next : "/");
    } catch (err) {
      setStatus(err && err.message ? err.message : String(err), true);
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const connect = document.querySelector("[data-wallet-connect]");
    const dev = document.querySelector("[data-wallet-dev]");
    const buttons = [connect, dev].filter(Boolean);
    if (connect) connect.addEventListener("click", () => signIn(injectedWallet, buttons));
    if (dev) dev.addEventListener("click", () => signIn(devWallet, buttons));
  });

  window.wagerWallet = { devWallet, injectedWallet, api, base58, SDK_VERSION };
})();
