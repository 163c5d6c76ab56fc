// A page's live room (a game's, an arena's) on the page's htmx WebSocket,
// which the layout opens for signed-in viewers.
(function () {
  "use strict";
  // The frames of each kind of room: the one that joins it (and the field
  // of it that names the room), and the one that tells a page that fell
  // behind to join again.
  const rooms = {
    game: { join: "join-game", idKey: "gameId", resync: "resync" },
    tournament: { join: "join-tournament", idKey: "tournamentId", resync: "resync-tournament" },
  };

  window.wagerLive = {
    // joinRoom joins the room of that kind and id from the last event the
    // page shows (the data-seq of the element seqId), whenever the socket
    // opens (again, after a reconnect) and when the server tells the page
    // to resync, so that it misses nothing; but only while open() says
    // the room is there to join. It returns a function that joins at once
    // on the socket already open (when open() has just become true).
    joinRoom(kind, id, seqId, open) {
      const room = rooms[kind];
      const lastSeq = () => Number((document.getElementById(seqId) || {}).dataset?.seq || 0);
      let current = null;
      const join = (socket) => {
        current = socket;
        if (open()) socket.send(JSON.stringify({ type: room.join, [room.idKey]: id, lastSeq: lastSeq() }));
      };
      document.body.addEventListener("htmx:wsOpen", (e) => join(e.detail.socketWrapper));
      // Only control messages are JSON; the rest is HTML for htmx.
      document.body.addEventListener("htmx:wsBeforeMessage", (e) => {
        const text = typeof e.detail.message === "string" ? e.detail.message : "";
        if (!text.startsWith("{")) return;
        e.preventDefault();
        try {
          if (JSON.parse(text).type === room.resync) join(e.detail.socketWrapper);
        } catch (_) {
          // not a control message: nothing to do
        }
      });
      return () => current && join(current);
    },
  };
})();
