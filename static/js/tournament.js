// The arena page: joins the tournament's live room over the page's htmx
// WebSocket (the layout opens one for signed-in viewers), resuming from
// the last event the page shows, so that the standings, the games in
// progress and the prizes change in place; counts down to the start or
// the end; and marks the viewer's own line in the standings.
(function () {
  "use strict";
  const page = document.querySelector("[data-arena-page]");
  if (!page) return;
  const tournamentId = page.dataset.arenaId;

  // An arena that is over has no room to join.
  window.wagerLive.joinRoom("tournament", tournamentId, "arena-seq", () => {
    const status = (document.querySelector("[data-testid=arena-status]") || {}).textContent || page.dataset.status;
    return status !== "finished" && status !== "cancelled";
  });

  const markMe = () => {
    const me = page.dataset.me;
    if (!me) return;
    document.querySelectorAll("[data-testid=arena-line]").forEach((row) => {
      const mine = row.dataset.userId === me;
      row.classList.toggle("bg-emerald-950", mine);
      if (mine) row.setAttribute("aria-current", "true");
    });
  };
  markMe();
  document.body.addEventListener("htmx:oobAfterSwap", markMe);

  const pad = (n) => String(n).padStart(2, "0");
  const tick = () => {
    const clock = document.getElementById("arena-clock");
    if (!clock || !clock.dataset.until) return;
    const left = Math.max(0, Math.floor((Date.parse(clock.dataset.until) - Date.now()) / 1000));
    const h = Math.floor(left / 3600);
    const text = (h > 0 ? h + ":" + pad(Math.floor((left % 3600) / 60)) : Math.floor(left / 60)) + ":" + pad(left % 60);
    clock.textContent = clock.dataset.label + " " + text;
  };
  setInterval(tick, 1000);
  tick();
})();
