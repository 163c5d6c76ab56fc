// The transparency page's "Check my share": the browser fetches the latest
// proof of reserves and the user's leaf (salt, balance, path), hashes the
// leaf itself with Web Crypto's SHA-256 and climbs the path, adding sums
// (no negative sum, no overflow past 2^63 - 1), to the published root,
// after checking the snapshot's Ed25519 signature by the public log's key
// (a golang.org/x/mod/sumdb/note signature of its statement line) with
// Web Crypto. Nothing of the verdict is the server's word but the numbers
// it checks and the key, which cmd/verify pins.
(function () {
  "use strict";
  const MAX = (1n << 63n) - 1n;

  const b64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const be64 = (n) => {
    const out = new Uint8Array(8);
    new DataView(out.buffer).setBigUint64(0, n);
    return out;
  };
  const concat = (...parts) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  };
  const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const usdc = (minor) => {
    const whole = minor / 1000000n, frac = (minor % 1000000n).toString().padStart(6, "0").replace(/0{1,4}$/, "");
    return whole.toString() + "." + frac + " USDC";
  };

  async function get(path) {
    const res = await fetch(path, { credentials: "same-origin",
      headers: { "X-App-Id": "web", "X-SDK-Version": "1.0.0", Accept: "application/json" } });
    const data = await res.json().catch(() => ({}));
    if (res.status === 404) return null;
    if (!res.ok) throw new Error(data.message || "The server answered " + res.status + ".");
    return data;
  }

  // signedBy checks the snapshot's signature by the log's key (name+hash+
  // base64 of 0x01 and the Ed25519 public key): the signature is the key's
  // 4-byte hash and the Ed25519 signature of the statement line and a
  // newline. It returns the key's name, or throws saying what fails.
  async function signedBy(snap) {
    const res = await fetch("/transparency/key", { credentials: "same-origin" });
    const [name, keyHash, keyB64] = (await res.text()).trim().split("+");
    const key = b64(keyB64 || ""), sig = b64(snap.signature || "");
    if (!res.ok || key.length !== 33 || key[0] !== 1) throw new Error("the log's key could not be read.");
    const line = "wager-arena:reserves:" + snap.snapshotId + ":" + snap.slot + ":" + snap.liabilitiesMinor + ":" +
      snap.assetsMinor + ":" + snap.rootHash + "\n";
    const pub = await crypto.subtle.importKey("raw", key.slice(1), { name: "Ed25519" }, false, ["verify"]);
    const ok = sig.length === 68 && hex(sig.slice(0, 4)) === keyHash &&
      await crypto.subtle.verify({ name: "Ed25519" }, pub, sig.slice(4), new TextEncoder().encode(line));
    return ok ? name : null;
  }

  // check answers the verdict in words: what holds, or what does not.
  async function check() {
    const snap = await get("/reserves");
    if (!snap) return { ok: false, text: "No proof of reserves has been taken yet." };
    const key = await signedBy(snap);
    if (!key) {
      return { ok: false, text: "Proof of reserves " + snap.snapshotId + " is not signed by the log's key: its figures are not the ones the platform signed." };
    }
    const proof = await get("/users/me/reserves-proof");
    if (!proof) return { ok: true, text: "The platform owed you nothing at proof of reserves " + snap.snapshotId + ": you have no leaf in it." };
    if (proof.snapshotId !== snap.snapshotId) {
      return { ok: false, text: "Your proof is of snapshot " + proof.snapshotId + ", the published one is " + snap.snapshotId + ": reload and check again." };
    }
    const balance = BigInt(proof.balanceMinor);
    if (balance < 0n) return { ok: false, text: "Your leaf's balance is negative." };
    let hash = await sha256(concat([0], b64(proof.salt), new TextEncoder().encode(proof.userId), be64(balance)));
    let sum = balance;
    for (const [i, step] of proof.path.entries()) {
      const sib = BigInt(step.sumMinor);
      if (sib < 0n || sum + sib > MAX) return { ok: false, text: "Step " + (i + 1) + " of your path has a negative sum or overflows: it hides money." };
      const s = b64(step.hash);
      hash = await sha256(step.side === "left" ? concat([1], s, be64(sib), hash, be64(sum)) : concat([1], hash, be64(sum), s, be64(sib)));
      sum += sib;
    }
    if (hex(hash) !== hex(b64(snap.rootHash)) || sum !== BigInt(snap.liabilitiesMinor)) {
      return { ok: false, text: "Your path does not lead to the published root: your balance of " + usdc(balance) + " is not counted in proof of reserves " + snap.snapshotId + "." };
    }
    return { ok: true, text: "Your balance of " + usdc(balance) + " is counted in proof of reserves " + snap.snapshotId +
      ": your path of " + proof.path.length + " steps leads to its root, which sums " + usdc(sum) + " owed to " + snap.users +
      (snap.users === 1 ? " user" : " users") + ", signed by the log's key " + key + "." };
  }

  document.addEventListener("click", async (e) => {
    const button = e.target.closest && e.target.closest("[data-reserves-check]");
    if (!button) return;
    const out = document.querySelector("[data-reserves-result]");
    button.disabled = true;
    out.className = "mt-2 muted";
    out.textContent = "Checking…";
    try {
      const v = await check();
      out.className = "mt-2 font-semibold " + (v.ok ? "text-emerald-400" : "text-rose-400");
      out.textContent = v.text;
    } catch (err) {
      out.className = "mt-2 text-rose-400";
      out.textContent = "The check could not run: " + err.message;
    } finally {
      button.disabled = false;
    }
  });
})();
