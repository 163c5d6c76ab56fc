// Pages that follow something without a socket ("nothing is live", the
// maintenance page) carry data-reload-after="<seconds>" and load
// themselves again after it. A script rather than <meta
// http-equiv="refresh">, which screen readers announce as a page forcing a
// timed change. TV for a signed-out viewer carries
// data-reload-when-ended="<game id>" instead: it asks for the game every
// 5 seconds and loads the page again (the next game) only once it ended.
(() => {
  const el = document.querySelector("[data-reload-after]");
  const seconds = el ? Number(el.dataset.reloadAfter) : 0;
  if (seconds > 0) setTimeout(() => window.location.reload(), seconds * 1000);
})();
(() => {
  const el = document.querySelector("[data-reload-when-ended]");
  if (!el) return;
  const id = el.dataset.reloadWhenEnded;
  const look = async () => {
    try {
      const game = await window.wagerWallet.apiGet("/games/" + encodeURIComponent(id));
      if (game.status !== "active") {
        window.location.reload();
        return;
      }
    } catch (_) {
      // the network or the server failed this once: look again later
    }
    setTimeout(look, 5000);
  };
  setTimeout(look, 5000);
})();
