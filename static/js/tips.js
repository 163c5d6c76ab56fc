// Tips: a tip button (on a chat message, on a profile) opens the page's
// tip panel for its user; the panel prepares the tip, has the wallet sign
// it and broadcasts it, saying how far it got until it is confirmed. The
// buttons on the viewer's own messages are hidden here because a live chat
// line is the same HTML for every viewer.
(function () {
  "use strict";
  const panel = document.querySelector("[data-tip-panel]");
  if (!panel) return;
  const me = panel.dataset.me;
  const form = panel.querySelector("[data-tip-form]");
  const status = panel.querySelector("[data-tip-status]");
  const submit = form.querySelector("[type=submit]");
  let to = null;

  const say = (text, bad) => {
    status.textContent = text;
    status.className = "min-h-[1.25rem] text-sm " + (bad ? "text-rose-400" : "text-slate-300");
  };
  const showButtons = () =>
    document.querySelectorAll("[data-tip-user]").forEach((b) => b.classList.toggle("hidden", !me || b.dataset.tipUser === me));
  showButtons();
  document.body.addEventListener("htmx:oobAfterSwap", showButtons);
  document.body.addEventListener("htmx:afterSwap", showButtons);

  // One listener for every button, those that arrive live included.
  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("[data-tip-user]");
    if (!button || button.dataset.tipUser === me) return;
    to = { id: button.dataset.tipUser, name: button.dataset.tipName };
    panel.querySelector("[data-tip-to]").textContent = to.name;
    panel.classList.remove("hidden");
    say("");
    form.elements.amount.focus();
    panel.scrollIntoView({ block: "nearest" });
  });
  panel.querySelectorAll("[data-tip-preset]").forEach((b) =>
    b.addEventListener("click", () => {
      form.elements.amount.value = b.dataset.tipPreset;
    }),
  );
  panel.querySelector("[data-tip-close]").addEventListener("click", () => panel.classList.add("hidden"));

  const toB64 = (bytes) => btoa(String.fromCharCode(...bytes));
  const fromB64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!to) return;
    const w = window.wagerWallet;
    submit.disabled = true;
    try {
      const amount = w.parseUSDC(form.elements.amount.value);
      const body = { toUserId: to.id, amountMinor: amount };
      if (panel.dataset.contextType) body.context = { type: panel.dataset.contextType, id: panel.dataset.contextId };
      say("Preparing the tip…");
      const mine = await w.apiGet("/users/me");
      const prepared = await w.api("/tips/prepare", body);
      const wallet = await w.walletForSigning(mine.walletAddress);
      say("Approve the tip in " + wallet.name + "…");
      const signed = await wallet.signTransaction(fromB64(prepared.transaction));
      say("Waiting for confirmation on chain…");
      await w.api("/tips/broadcast", { intentId: prepared.intentId, signedTransaction: toB64(signed) });
      say("Sent! " + to.name + " got " + w.formatUSDC(amount) + " USDC.");
      form.elements.amount.value = "";
    } catch (err) {
      say(err && err.message ? err.message : String(err), true);
    } finally {
      submit.disabled = false;
    }
  });
})();
