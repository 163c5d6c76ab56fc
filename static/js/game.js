// The game page: joins the live room over the page's htmx WebSocket (the
// layout opens one for signed-in viewers; it also carries their balance)
// while the game is active, resuming from the last event seen, counts the
// round timer down, keeps the
// player's own pending choice until the next round, offers Connect Four's
// drop buttons to the player on turn, and signs donations and bets with the wallet.
(function () {
  "use strict";
  const page = document.querySelector("[data-game-page]");
  if (!page) return;
  const gameId = page.dataset.gameId;
  const lastSeq = () => Number((document.getElementById("live-seq") || {}).dataset?.seq || 0);

  // Join (or rejoin after a reconnect) from the last event this page has.
  // A game that was over when the page opened has no room to join.
  const join = (socket) => {
    if (page.dataset.status === "active") socket.send(JSON.stringify({ type: "join-game", gameId, lastSeq: lastSeq() }));
  };
  document.body.addEventListener("htmx:wsOpen", (e) => join(e.detail.socketWrapper));
  // A page that fell behind is told to resync: it rejoins from its last
  // event and misses nothing. Only that message is JSON; the rest is HTML.
  document.body.addEventListener("htmx:wsBeforeMessage", (e) => {
    const text = typeof e.detail.message === "string" ? e.detail.message : "";
    if (!text.startsWith("{")) return;
    e.preventDefault();
    try {
      if (JSON.parse(text).type === "resync") join(e.detail.socketWrapper);
    } catch (_) {
      // not a control message: nothing to do
    }
  });

  function tick() {
    const timer = document.querySelector("[data-deadline]");
    if (timer) {
      const left = Math.max(0, Math.ceil((Date.parse(timer.dataset.deadline) - Date.now()) / 1000));
      const text = timer.querySelector("[data-timer-text]");
      if (text) text.textContent = left + "s";
      timer.classList.toggle("text-rose-400", left <= 5);
    }
  }
  setInterval(tick, 250);
  tick();

  // Connect Four: the drop buttons show only for the player on turn (the
  // live board is the same for everyone).
  const showDrops = () => {
    const board = document.getElementById("board");
    const mine = board && page.dataset.me !== "" && board.dataset.turn === page.dataset.me;
    document.querySelectorAll("[data-column-button]").forEach((b) => b.classList.toggle("hidden", !mine));
  };

  // A finished game's rematch panel: each player sees the buttons that are
  // theirs, and goes to the rematch when it starts while they watch.
  const showRematch = (live) => {
    const panel = document.getElementById("rematch");
    if (!panel) return;
    const me = page.dataset.me;
    const player = page.dataset.player === "true";
    const requested = (panel.dataset.requested || "").split(" ").filter(Boolean);
    const mine = requested.includes(me);
    const ask = panel.querySelector("[data-rematch-ask]");
    if (ask) {
      ask.classList.toggle("hidden", !player || mine);
      ask.textContent = requested.length ? "Accept the rematch" : "Ask for a rematch";
    }
    const withdraw = panel.querySelector("[data-rematch-withdraw]");
    if (withdraw) withdraw.classList.toggle("hidden", !player || !mine);
    panel.querySelectorAll("[data-player-only]").forEach((el) => el.classList.toggle("hidden", !player));
    if (live && player && panel.dataset.newGame) window.location.assign("/game/" + panel.dataset.newGame);
  };
  showRematch(false);

  // Phones show the game or the chat, one at a time (wider screens show
  // both side by side and hide the switch).
  document.querySelectorAll("[data-show-tab]").forEach((button) =>
    button.addEventListener("click", () => {
      const tab = button.dataset.showTab;
      document.querySelectorAll("[data-show-tab]").forEach((b) => b.setAttribute("aria-pressed", String(b === button)));
      document.querySelectorAll("[data-tab]").forEach((el) => el.classList.toggle("tab-off", el.dataset.tab !== tab));
      if (tab === "chat") {
        const list = document.getElementById("chat-list");
        if (list) list.scrollTop = list.scrollHeight;
      }
    }),
  );

  // After live updates: forget the pending choice once its round is over,
  // and close the controls when the game ends.
  document.body.addEventListener("htmx:oobAfterSwap", () => {
    showDrops();
    showRematch(true);
    const mine = document.getElementById("my-choice");
    const timer = document.querySelector("[data-deadline]");
    if (mine && mine.dataset.round !== "0" && (!timer || timer.dataset.round !== mine.dataset.round)) {
      mine.textContent = "";
      mine.dataset.round = "0";
    }
    const status = document.getElementById("game-status");
    if (status && status.textContent.trim() !== "active" && page.dataset.tv !== undefined && !page.dataset.next) {
      page.dataset.next = "soon"; // TV: the result for a few seconds, then the next live game
      setTimeout(() => window.location.assign("/tv"), 6000);
    }
    if (status && status.textContent.trim() !== "active") {
      document.querySelectorAll("[data-testid=move-controls], [data-donate-section], [data-chat-form]").forEach((el) => el.remove());
      const closed = document.querySelector("[data-chat-closed]");
      if (closed) closed.classList.remove("hidden");
    }
    // Betting closes at the first reveal or move: the form goes, the
    // panel says so.
    const bets = document.getElementById("bets");
    if (bets && bets.dataset.open === "false") document.querySelectorAll("[data-bet-section]").forEach((el) => el.remove());
    const empty = document.querySelector("[data-chat-empty]");
    if (empty && document.querySelectorAll("[data-testid=chat-message]").length) empty.remove();
    const list = document.getElementById("chat-list");
    if (list) list.scrollTop = list.scrollHeight;
  });

  document.body.addEventListener("chat-sent", () => {
    const input = document.getElementById("chat-text");
    if (input) input.value = "";
  });

  const toB64 = (bytes) => btoa(String.fromCharCode(...bytes));
  const fromB64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

  // Money from the viewer's wallet into the game's escrow: a donation or a
  // bet. prepare and submit are the API paths; body is what prepare takes
  // besides the amount.
  const signFlow = (form, what, path, body, done) => {
    const status = form.querySelector("[role=status]");
    const button = form.querySelector("button");
    const say = (text, bad) => {
      status.textContent = text;
      status.className = "min-h-[1.25rem] text-sm " + (bad ? "text-rose-400" : "text-slate-300");
    };
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const w = window.wagerWallet;
      button.disabled = true;
      try {
        const amount = w.parseUSDC(form.elements.amount.value);
        say("Preparing the " + what + "…");
        const me = await w.apiGet("/users/me");
        const prepared = await w.api(path + "/prepare", Object.assign({ amountMinor: amount }, body()));
        const wallet = await w.walletForSigning(me.walletAddress);
        say("Approve the " + what + " in " + wallet.name + "…");
        const signed = await wallet.signTransaction(fromB64(prepared.transaction));
        say("Waiting for confirmation on chain…");
        const receipt = await w.api(path + "/submit", { intentId: prepared.intentId, signedTransaction: toB64(signed) });
        say(done(receipt));
        form.elements.amount.value = "";
      } catch (err) {
        say(err && err.message ? err.message : String(err), true);
      } finally {
        button.disabled = false;
      }
    });
  };

  const donate = document.querySelector("[data-donate-form]");
  if (donate) signFlow(donate, "donation", "/games/" + gameId + "/donations", () => ({}), () => "Thank you! Your donation is in the pot.");

  const bet = document.querySelector("[data-bet-form]");
  if (bet) {
    const on = bet.elements.on;
    signFlow(bet, "bet", "/games/" + gameId + "/bets", () => ({ onUserId: on.value }), (receipt) => {
      const name = on.options[on.selectedIndex].text;
      // The new bet joins "Your bets" at once; a late one is refunded.
      const list = document.querySelector("[data-my-bets]");
      if (list) {
        const li = document.createElement("li");
        li.dataset.testid = "my-bet";
        li.textContent = window.wagerWallet.formatUSDC(receipt.amountMinor) + " USDC on " + name + " · " + (receipt.refunded ? "refunded" : "open");
        list.prepend(li);
        document.querySelectorAll("[data-my-bets-empty]").forEach((el) => el.remove());
      }
      return receipt.refunded ? "Betting had closed: your bet is refunded to your platform balance." : "Your bet on " + name + " is in the pool.";
    });
  }
})();
