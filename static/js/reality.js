// The reality check: every data-minutes of a signed-in session (counted
// from data-started, the sign-in, by the server's clock at data-now), the
// dialog says how long the player has played and what they have won or
// lost since signing in, with "Keep playing" and "Take a break". A mark
// passed while no page was open (between two pages) is shown on the next
// page; each mark is shown once per browser tab.
(() => {
  const dialog = document.getElementById("reality-check");
  if (!dialog || typeof dialog.showModal !== "function") return;
  const every = Number(dialog.dataset.minutes) * 60000;
  const started = Date.parse(dialog.dataset.started);
  const serverNow = Date.parse(dialog.dataset.now);
  if (!(every > 0) || Number.isNaN(started) || Number.isNaN(serverNow)) return;
  const loadedAt = Date.now();
  const elapsed = () => serverNow - started + (Date.now() - loadedAt);
  const key = "reality-check-shown:" + dialog.dataset.started;
  const shown = () => Number(sessionStorage.getItem(key) || 0);
  let timer = 0;

  const usdc = (minor) => (window.wagerWallet ? window.wagerWallet.formatUSDC(minor) : String(minor / 1e6));
  function duration(minutes) {
    const h = Math.floor(minutes / 60), m = minutes % 60;
    const parts = [];
    if (h) parts.push(h + (h === 1 ? " hour" : " hours"));
    if (m || !h) parts.push(m + (m === 1 ? " minute" : " minutes"));
    return parts.join(" and ");
  }
  function netWords(net) {
    if (net === null) return "";
    if (net > 0) return ", and you have won " + usdc(net) + " USDC";
    if (net < 0) return ", and you have lost " + usdc(-net) + " USDC";
    return ", and you have neither won nor lost";
  }

  async function show() {
    const due = Math.floor(elapsed() / every);
    sessionStorage.setItem(key, String(due));
    let net = null;
    try {
      net = (await window.wagerWallet.apiGet("/users/me/session")).netMinor;
    } catch (_) {
      // The time alone still says something: show it.
    }
    dialog.querySelector("[data-reality-text]").textContent =
      "You have been playing for " + duration(Math.floor(elapsed() / 60000)) + " since you signed in" + netWords(net) + ".";
    if (!dialog.open) dialog.showModal();
  }

  function schedule() {
    clearTimeout(timer);
    const e = elapsed();
    if (Math.floor(e / every) > shown()) {
      show();
      return;
    }
    timer = setTimeout(schedule, (Math.floor(e / every) + 1) * every - e);
  }

  dialog.querySelector("[data-reality-keep]").addEventListener("click", () => {
    dialog.close();
    schedule();
  });
  dialog.addEventListener("cancel", () => setTimeout(schedule, 0));
  schedule();
})();
