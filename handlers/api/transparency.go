package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"golang.org/x/mod/sumdb/tlog"

	"wager.example.com/sdk/anchor"
	"wager.example.com/sdk/sumtree"
	"wager/domain"
	"wager/domain/anchors"
	"wager/domain/gamelog"
	"wager/domain/reserves"
	"wager/web"
)

// Transparency serves the public log of games (its signed checkpoints,
// its key, its hash tiles and records, and each game's record with its
// inclusion proof) and the proof of reserves, to anyone, signed in or not;
// a user's own share of the reserves to them.
type Transparency struct {
	Log      *gamelog.Log
	Reserves *reserves.Service
	Anchors  *anchors.Service
}

// Routes registers the public log of games.
func (h *Transparency) Routes(r Router) {
	r.Asset(http.MethodGet, "/transparency/checkpoint", h.checkpoint, web.Op{Tag: "transparency",
		Summary: "The public log of games' latest checkpoint: a signed note",
		Description: "Three lines, the C2SP tlog-checkpoint text: the log's origin, its size in decimal and its root hash " +
			"(RFC 6962, as golang.org/x/mod/sumdb/tlog computes it) in standard base64, then the signature " +
			"(golang.org/x/mod/sumdb/note) by the key GET /transparency/key gives. " +
			"The tree's hash tiles are at /transparency/ followed by the path tlog.Tile.Path() gives, height 8, so that " +
			"tlog.TileHashReader reads the log: tile/8/L/NNN for a full tile (never changes), tile/8/L/NNN.p/W for a partial one; " +
			"404 for a tile the latest tree does not have.",
		Produces: []string{"text/plain"}})
	r.Asset(http.MethodGet, "/transparency/key", h.key, web.Op{Tag: "transparency",
		Summary:     "The key that verifies the log's checkpoints",
		Description: "In note.NewVerifier's format: origin+hash+base64.", Produces: []string{"text/plain"}})
	r.Files("/transparency/tile/*", h.tile)
	r.Asset(http.MethodGet, "/transparency/records/:index", h.record, web.Op{Tag: "transparency",
		Summary:     "A record of the log by its index: its exact bytes, which the tree hashes",
		Description: "A JSON object (see the API's Verifiability section); never changes.",
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound}, Produces: []string{"application/json"}})
	r.JSON(http.MethodGet, "/games/:id/record", h.gameRecord, web.Op{Tag: "transparency", Auth: web.AuthNone,
		Summary: "A game's record in the public log, with its inclusion proof in the latest checkpoint",
		Description: "404 until the game's money is final and the game logged (its end, or for a game held for review " +
			"its release or void). Check it with tlog.CheckRecord(inclusionProof, size, root, index, tlog.RecordHash(record)).",
		Response: gamelog.Proof{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/transparency/anchors", h.anchors, web.Op{Tag: "transparency", Auth: web.AuthNone,
		Summary: "The anchors on Solana of the log's checkpoints and of the proofs of reserves, newest first",
		Description: "When the log grew, at most every ANCHOR_INTERVAL, and once for each proof of reserves, the fee payer writes " +
			"an SPL Memo (program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr): wager-arena:games-log:<size>:<base64 root> or " +
			"wager-arena:reserves:<snapshotId>:<base64 root>. getTransaction of its signature, on any RPC of the cluster, " +
			"gives the memo in its log messages. Only the anchors that landed are listed; limit is 1 to 100 (default 50).",
		Query: []web.Param{{Name: "limit", Description: "how many, newest first", Type: "integer", Min: web.Bound(1), Max: web.Bound(100),
			Default: 50}},
		Response: []anchor.Anchor{}, Errors: []int{http.StatusBadRequest}})
	r.JSON(http.MethodGet, "/reserves", h.reserves, web.Op{Tag: "transparency", Auth: web.AuthNone,
		Summary: "The latest proof of reserves: what the platform owes its users, and the USDC it holds on chain",
		Description: "Taken every RESERVES_INTERVAL: liabilitiesMinor is the sum at the root of a Merkle-sum tree with a leaf " +
			"for every user the platform owes anything (SHA-256(0x00 || salt || userId || balance as 8 bytes big-endian); " +
			"inner nodes SHA-256(0x01 || left hash || left sum || right hash || right sum); leaves in the order of their hashes, " +
			"padded to a power of two with empty nodes). assets are the platform's USDC token accounts read at slot. " +
			"Each user checks their own leaf with GET /users/me/reserves-proof. 404 before the first snapshot.",
		Response: sumtree.Snapshot{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/users/me/reserves-proof", h.reservesProof, web.Op{Tag: "transparency", Auth: web.AuthRequired,
		Summary: "Your share of the latest proof of reserves: your leaf's salt and balance and its path to the root",
		Description: "Hash your leaf, then climb the path (each step the sibling and the side it stands on), adding sums, " +
			"and compare with GET /reserves's rootHash and liabilitiesMinor. 404 when the platform owed you nothing at the snapshot, " +
			"or before the first snapshot.",
		Response: sumtree.Proof{}, Errors: []int{http.StatusNotFound}})
}

func (h *Transparency) checkpoint(c echo.Context) error {
	t, err := h.Log.Tree(c.Request().Context())
	if err != nil {
		return err
	}
	cp, err := h.Log.Checkpoint(t)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", cp)
}

func (h *Transparency) key(c echo.Context) error {
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte(h.Log.VerifierKey()+"\n"))
}

func (h *Transparency) tile(c echo.Context) error {
	t, err := tlog.ParseTilePath("tile/" + c.Param("*"))
	if err != nil {
		return domain.Errorf(domain.CodeNotFound, "no such tile: %s", c.Param("*"))
	}
	ctx := c.Request().Context()
	tree, err := h.Log.Tree(ctx)
	if err != nil {
		return err
	}
	data, err := h.Log.Tile(ctx, t, tree.N)
	if err != nil {
		return err
	}
	if t.W == 1<<gamelog.TileHeight {
		c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		c.Response().Header().Set("Cache-Control", "no-cache")
	}
	return c.Blob(http.StatusOK, "application/octet-stream", data)
}

func (h *Transparency) record(c echo.Context) error {
	index, err := strconv.ParseInt(c.Param("index"), 10, 64)
	if err != nil || index < 0 {
		return domain.Invalid(map[string]string{"index": "must be a record's index: 0 or more"})
	}
	b, err := h.Log.Record(c.Request().Context(), index)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

func (h *Transparency) gameRecord(c echo.Context) error {
	p, err := h.Log.GameRecord(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *Transparency) anchors(c echo.Context) error {
	limit := 50
	if q := c.QueryParam("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > 100 {
			return domain.Invalid(map[string]string{"limit": "must be a whole number from 1 to 100"})
		}
		limit = n
	}
	list, err := h.Anchors.Landed(c.Request().Context(), limit)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.JSON(http.StatusOK, list)
}

func (h *Transparency) reserves(c echo.Context) error {
	s, err := h.Reserves.Latest(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.JSON(http.StatusOK, s)
}

func (h *Transparency) reservesProof(c echo.Context) error {
	p, err := h.Reserves.ProofOf(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}
