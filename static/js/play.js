// The waiting room: go to the game the moment a match is made or a
// challenge accepted (a notice on the live socket), with a slow poll as a
// fallback. A page marked data-follow-matches follows the games an arena
// pairs the viewer in, as the notice comes: the arena's page and an arena
// game's page (its players', whose result stays on screen) show a link to
// the next game (data-next-game) and stay until the player moves on.
(function () {
  "use strict";
  const waiting = !!document.querySelector("[data-waiting]");
  const follow = document.querySelector("[data-follow-matches]");
  if (!waiting && !follow) return;
  const go = (id) => window.location.assign("/game/" + id);
  function connect() {
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      if (m.type !== "notice") return;
      const next = document.querySelector("[data-next-game]");
      if (m.notice === "game:matched" && !waiting && next) {
        next.querySelector("a").href = "/game/" + m.data.gameId;
        next.classList.remove("hidden");
      } else if (m.notice === "game:matched") {
        go(m.data.gameId);
      }
      if (!waiting) return;
      if (m.notice === "challenge:accepted" && m.data.gameId) go(m.data.gameId);
      if (m.notice === "challenge:declined") window.location.assign("/play");
    };
    ws.onclose = () => setTimeout(connect, 2000);
  }
  connect();
  if (!waiting) return;
  setInterval(async () => {
    const res = await fetch("/users/me/current-game", { headers: { "X-SDK-Version": "1.0.0", "X-App-Id": "web" } });
    if (res.status === 200) go((await res.json()).gameId);
  }, 3000);
})();
