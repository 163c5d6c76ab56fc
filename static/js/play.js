// The waiting room: go to the game the moment a match is made or a
// challenge accepted (a notice on the live socket), with a slow poll as a
// fallback.
(function () {
  "use strict";
  if (!document.querySelector("[data-waiting]")) return;
  const go = (id) => window.location.assign("/game/" + id);
  function connect() {
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      if (m.type !== "notice") return;
      if (m.notice === "game:matched" || (m.notice === "challenge:accepted" && m.data.gameId)) go(m.data.gameId);
      if (m.notice === "challenge:declined") window.location.assign("/play");
    };
    ws.onclose = () => setTimeout(connect, 2000);
  }
  connect();
  setInterval(async () => {
    const res = await fetch("/users/me/current-game", { headers: { "X-SDK-Version": "1.0.0", "X-App-Id": "web" } });
    if (res.status === 200) go((await res.json()).gameId);
  }, 3000);
})();
