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

  // Join (or rejoin after a reconnect) from the last event this page has.
  // A game that was over when the page opened has no room to join.
  window.wagerLive.joinRoom("game", gameId, "live-seq", () => page.dataset.status === "active");

  // Every clock: the round's or turn's, and a berserk player's own.
  function tick() {
    document.querySelectorAll("[data-deadline]").forEach((timer) => {
      const left = Math.max(0, Math.ceil((Date.parse(timer.dataset.deadline) - Date.now()) / 1000));
      const text = timer.querySelector("[data-timer-text]");
      if (text) text.textContent = left + "s";
      timer.classList.toggle("text-rose-400", left <= 5);
    });
  }
  setInterval(tick, 250);
  tick();

  // Connection quality: a ping on the page's socket every few seconds,
  // the time to its pong in words (good under 150 ms, fair under 400 ms,
  // poor above; lost when none comes back before the next ping).
  const quality = document.querySelector("[data-connection-quality]");
  if (quality) {
    let socket = null;
    let sentAt = 0;
    const ping = () => {
      if (sentAt) quality.textContent = "Connection: lost, reconnecting…";
      if (!socket) return;
      sentAt = performance.now();
      socket.send(JSON.stringify({ type: "ping" }));
    };
    document.body.addEventListener("htmx:wsOpen", (e) => {
      socket = e.detail.socketWrapper;
      sentAt = 0;
      ping();
    });
    document.body.addEventListener("htmx:wsClose", () => {
      socket = null;
    });
    document.body.addEventListener("htmx:wsBeforeMessage", (e) => {
      const text = typeof e.detail.message === "string" ? e.detail.message : "";
      if (!sentAt || !text.startsWith('{"type":"pong"')) return;
      const ms = Math.round(performance.now() - sentAt);
      sentAt = 0;
      const words = ms < 150 ? "good" : ms < 400 ? "fair" : "poor";
      quality.textContent = "Connection: " + words + " · " + ms + " ms";
      quality.dataset.quality = words;
    });
    setInterval(ping, 5000);
  }

  // Sound and motion: a short sound and a drop animation for each Connect
  // Four move, and a cue when the viewer's turn comes. Off by default for
  // people who prefer reduced motion; the toggle remembers the choice.
  const prefersReduced = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  const stored = (() => {
    try {
      return window.localStorage.getItem("wager.motion");
    } catch (_) {
      return null;
    }
  })();
  let motion = stored ? stored === "on" : !prefersReduced;
  const toggle = document.querySelector("[data-sound-toggle]");
  const showMotion = () => {
    document.documentElement.dataset.motion = motion ? "on" : "off";
    if (toggle) {
      toggle.setAttribute("aria-pressed", String(motion));
      toggle.textContent = "Sound and motion: " + (motion ? "on" : "off");
    }
  };
  showMotion();
  if (toggle) {
    toggle.addEventListener("click", () => {
      motion = !motion;
      try {
        window.localStorage.setItem("wager.motion", motion ? "on" : "off");
      } catch (_) {
        // private mode: the choice lasts for this page
      }
      showMotion();
    });
  }
  let audio = null;
  // beep plays short tones (Hz, one after the other); browsers allow sound
  // only after the viewer has clicked on the page, which a player has.
  const beep = (tones) => {
    if (!motion) return;
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      tones.forEach((hz, i) => {
        const at = audio.currentTime + i * 0.12;
        const osc = audio.createOscillator();
        const gain = audio.createGain();
        osc.frequency.value = hz;
        gain.gain.setValueAtTime(0.08, at);
        gain.gain.exponentialRampToValueAtTime(0.001, at + 0.11);
        osc.connect(gain).connect(audio.destination);
        osc.start(at);
        osc.stop(at + 0.12);
      });
    } catch (_) {
      // no audio here: the motion still shows
    }
  };
  const boardNow = () => {
    const board = document.getElementById("board");
    return board ? { moves: board.dataset.moves, turn: board.dataset.turn } : null;
  };
  let seen = boardNow();
  let round = (document.querySelector("[data-testid=round-number]") || {}).textContent;
  // cue follows each live update: a new piece drops with a sound, and the
  // viewer's turn (or a new round of rock, paper, scissors) is announced.
  const cue = () => {
    const now = boardNow();
    if (now && seen && now.moves !== seen.moves) {
      const status = document.getElementById("move-status");
      if (status) status.textContent = ""; // an earlier refusal is old news now
      const cell = document.querySelector("[data-last-move]");
      if (cell && motion) cell.classList.add("c4-dropping");
      beep([220]);
      if (now.turn && now.turn === page.dataset.me && now.turn !== seen.turn) {
        const mark = document.querySelector("[data-testid=on-turn]");
        if (mark && motion) mark.classList.add("turn-cue");
        beep([220, 660, 880]);
      }
    }
    seen = now || seen;
    const r = (document.querySelector("[data-testid=round-number]") || {}).textContent;
    if (!now && page.dataset.player === "true" && r && r !== round) beep([660, 880]);
    round = r;
  };

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
  // A finished game's result card: each player reads their own line.
  const showResultLine = () => {
    document.querySelectorAll("[data-result-for]").forEach((el) =>
      el.classList.toggle("hidden", el.dataset.resultFor !== page.dataset.me));
  };

  // The viewer's own bets and the market's end: once the game is over, the
  // page asks the server again for "Your bets" (won, lost or refunded, with
  // the amounts), which the live stream does not carry since it is the same
  // for everyone. A market that never opened sends no event of its own:
  // its panel says it closed.
  let ended = page.dataset.status !== "active";
  // A player of an arena game waits here for the next one once it is
  // over: the page is then in the arena's room, where the arena pairs
  // only the entrants it finds (the game's room takes no page of a game
  // that ended, after a reconnect).
  const arena = page.dataset.arenaId;
  const joinArena = arena ? window.wagerLive.joinRoom("tournament", arena, "arena-seq", () => ended) : () => {};
  const gameEnded = async () => {
    joinArena();
    const market = document.getElementById("market");
    if (market && market.dataset.status === "open") {
      market.dataset.status = "closed";
      const summary = market.querySelector("[data-testid=market-summary]");
      if (summary) summary.textContent = "Trading closed when the game ended.";
      document.querySelectorAll("[data-market-form-section]").forEach((el) => el.remove());
    }
    const status = document.getElementById("move-status");
    if (status) status.remove();
    const toggleButton = document.querySelector("[data-sound-toggle]");
    if (toggleButton) toggleButton.remove();
    if (!document.getElementById("my-bets")) return;
    try {
      const res = await fetch(window.location.pathname, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById("my-bets");
      const old = document.getElementById("my-bets");
      if (fresh && old) old.replaceWith(document.importNode(fresh, true));
    } catch (_) {
      // the bets stay as they were until the next reload
    }
  };

  document.body.addEventListener("htmx:oobAfterSwap", () => {
    showDrops();
    showRematch(true);
    showResultLine();
    cue();
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
    if (status && status.textContent.trim() !== "active" && !ended) {
      ended = true;
      gameEnded();
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
    if (list) {
      // A spectator who sees the moves late gets the chat at once, and a
      // line again after a reconnect: each message shows once.
      const seen = new Set();
      list.querySelectorAll(":scope > li[id]").forEach((li) => (seen.has(li.id) ? li.remove() : seen.add(li.id)));
      list.scrollTop = list.scrollHeight;
    }
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
      return receipt.refunded ? "Your bet could not join the pool when it landed: it is sent back to your wallet." : "Your bet on " + name + " is in the pool.";
    });
  }
})();
