// Package verify checks what the platform publishes without taking its
// word for anything: that a game's record is in the public log of games
// under a checkpoint signed by the log's key, that the log never rewrote
// what a checkpoint seen earlier covered, and that the record's own
// events give the outcome and the pot payout it states. It reads the
// server over HTTP only, with golang.org/x/mod/sumdb/tlog and note; what
// it saw last (the log's key and latest checkpoint) it keeps in a file,
// so that a later check proves the log only grew since.
package verify

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"wager.example.com/sdk/anchor"
)

// Verifier checks one server's public log of games.
type Verifier struct {
	URL  string       // the server, such as https://arena.example
	HTTP *http.Client // nil: http.DefaultClient
	// StateFile keeps the log's key and the last checkpoint verified
	// across runs ("": they are kept in memory, for this Verifier's life).
	StateFile string
	// Key is the log's verifier key (note.NewVerifier's format), given by
	// someone you trust. Empty: the one StateFile keeps, else the one the
	// server publishes the first time, which StateFile then keeps.
	Key string

	// RPC is a Solana RPC URL of the cluster the platform runs on, to check
	// the anchors ("": not checked).
	RPC string
	// Token is a signed-in user's bearer token, for Reserves ("": not
	// signed in).
	Token string

	mu   sync.Mutex // one check at a time: each reads and keeps the state
	kept State      // the state when there is no StateFile
}

// State is what a Verifier keeps between checks.
type State struct {
	Key        string `json:"key"`
	Checkpoint string `json:"checkpoint"` // the signed note of the last checkpoint verified
}

// Checkpoint is a verified checkpoint of the log.
type Checkpoint struct {
	Origin string
	Tree   tlog.Tree
	Note   string // the signed note
}

// GameCheck is what Game verified of a game.
type GameCheck struct {
	Record     Record
	Checkpoint Checkpoint
	Previous   *Checkpoint // the earlier checkpoint the log was proved consistent with, if any
	// Anchor is the newest anchor on Solana the checkpoint was proved to
	// extend (with RPC set; nil when none is listed yet).
	Anchor *anchor.Anchor
}

// Log verifies the log's latest checkpoint: signed by the log's key, and
// consistent with the last checkpoint this verifier saw; it keeps it.
func (v *Verifier) Log(ctx context.Context) (Checkpoint, *Checkpoint, error) {
	body, err := v.get(ctx, "/transparency/checkpoint")
	if err != nil {
		return Checkpoint{}, nil, err
	}
	return v.accept(ctx, string(body))
}

// Game verifies a game's record: in the log under the checkpoint it comes
// with (signed by the log's key, consistent with the last one seen), and
// replayed from its events to the outcome and pot payout it states.
func (v *Verifier) Game(ctx context.Context, gameID string) (GameCheck, error) {
	body, err := v.get(ctx, "/games/"+gameID+"/record")
	if err != nil {
		return GameCheck{}, err
	}
	var p struct {
		Index          int64    `json:"index"`
		Record         []byte   `json:"record"`
		Checkpoint     string   `json:"checkpoint"`
		InclusionProof [][]byte `json:"inclusionProof"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return GameCheck{}, fmt.Errorf("the server's answer for game %s is not a record with its proof: %w", gameID, err)
	}
	cp, prev, err := v.accept(ctx, p.Checkpoint)
	if err != nil {
		return GameCheck{}, err
	}
	proof := make(tlog.RecordProof, len(p.InclusionProof))
	for i, h := range p.InclusionProof {
		if len(h) != tlog.HashSize {
			return GameCheck{}, fmt.Errorf("the inclusion proof of game %s has a hash of %d bytes", gameID, len(h))
		}
		proof[i] = tlog.Hash(h)
	}
	if err := tlog.CheckRecord(proof, cp.Tree.N, cp.Tree.Hash, p.Index, tlog.RecordHash(p.Record)); err != nil {
		return GameCheck{}, fmt.Errorf("the record of game %s is not record %d of the log's checkpoint of %d records: "+
			"the record, or the log, is not what was signed (%v)", gameID, p.Index, cp.Tree.N, err)
	}
	var rec Record
	if err := oneKeyEach(p.Record); err != nil {
		return GameCheck{}, fmt.Errorf("record %d: %w", p.Index, err)
	}
	if err := json.Unmarshal(p.Record, &rec); err != nil {
		return GameCheck{}, fmt.Errorf("record %d is not a record of a game: %w", p.Index, err)
	}
	if rec.GameID != gameID || rec.Index != p.Index {
		return GameCheck{}, fmt.Errorf("record %d is of game %s at index %d, not of game %s", p.Index, rec.GameID, rec.Index, gameID)
	}
	if err := Replay(rec); err != nil {
		return GameCheck{}, err
	}
	c := GameCheck{Record: rec, Checkpoint: cp, Previous: prev}
	if v.RPC != "" {
		if c.Anchor, err = v.Anchored(ctx, cp); err != nil {
			return GameCheck{}, err
		}
	}
	return c, nil
}

// accept verifies a signed checkpoint with the log's key and, against the
// last checkpoint kept, proves from the log's tiles that the log only grew
// since; then keeps it. It returns it and the earlier one.
func (v *Verifier) accept(ctx context.Context, signed string) (Checkpoint, *Checkpoint, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	st, err := v.load()
	if err != nil {
		return Checkpoint{}, nil, err
	}
	key, err := v.key(ctx, st)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	cp, err := open(signed, key)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	var prev *Checkpoint
	if st.Checkpoint != "" {
		last, err := open(st.Checkpoint, key)
		if err != nil {
			return Checkpoint{}, nil, fmt.Errorf("the checkpoint kept in %s: %w", v.StateFile, err)
		}
		if err := v.consistent(ctx, last, cp); err != nil {
			return Checkpoint{}, nil, err
		}
		prev = &last
	}
	return cp, prev, v.save(State{Key: key, Checkpoint: cp.Note})
}

// key is the log's verifier key: the one given, else the one kept, else
// the one the server publishes; it must be the one kept, if any.
func (v *Verifier) key(ctx context.Context, st State) (string, error) {
	key := cmp.Or(v.Key, st.Key)
	if key == "" {
		published, err := v.get(ctx, "/transparency/key")
		if err != nil {
			return "", err
		}
		key = strings.TrimSpace(string(published))
	}
	if st.Key != "" && key != st.Key {
		return "", fmt.Errorf("the log's key %s is not the one this verifier kept, %s", key, st.Key)
	}
	return key, nil
}

// consistent proves, from the log's tiles, that a checkpoint extends the
// one kept from before.
func (v *Verifier) consistent(ctx context.Context, kept, cp Checkpoint) error {
	switch {
	case kept.Origin != cp.Origin:
		return fmt.Errorf("the checkpoint is of the log %q, the one kept of %q", cp.Origin, kept.Origin)
	case cp.Tree.N < kept.Tree.N:
		return fmt.Errorf("the log now has %d records, fewer than the %d of a checkpoint seen before: it removed records", cp.Tree.N, kept.Tree.N)
	case cp.Tree.N == kept.Tree.N && cp.Tree.Hash != kept.Tree.Hash:
		return fmt.Errorf("the log has two different trees of %d records: it rewrote its history", cp.Tree.N)
	case cp.Tree.N == kept.Tree.N:
		return nil
	}
	hashes := tlog.TileHashReader(cp.Tree, &tileReader{ctx: ctx, v: v})
	proof, err := tlog.ProveTree(cp.Tree.N, kept.Tree.N, hashes)
	if err == nil {
		err = tlog.CheckTree(proof, cp.Tree.N, cp.Tree.Hash, kept.Tree.N, kept.Tree.Hash)
	}
	if err != nil {
		return fmt.Errorf("the log's checkpoint of %d records does not extend the one of %d seen before: it rewrote its history (%v)",
			cp.Tree.N, kept.Tree.N, err)
	}
	return nil
}

// open verifies a signed checkpoint and reads its three lines.
func open(signed, key string) (Checkpoint, error) {
	verifier, err := note.NewVerifier(key)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("the log's key %q is not a note verifier key: %w", key, err)
	}
	n, err := note.Open([]byte(signed), note.VerifierList(verifier))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("the checkpoint is not signed by the log's key %s: %w", verifier.Name(), err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return Checkpoint{}, fmt.Errorf("the checkpoint's text is not three lines (origin, size, root hash): %q", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return Checkpoint{}, fmt.Errorf("the checkpoint's size %q is not a number of records", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("the checkpoint's root %q is not a base64 SHA-256 hash", lines[2])
	}
	return Checkpoint{Origin: lines[0], Tree: tlog.Tree{N: size, Hash: tlog.Hash(root)}, Note: signed}, nil
}

// tileReader reads the log's hash tiles from the server.
type tileReader struct {
	ctx context.Context
	v   *Verifier
}

func (r *tileReader) Height() int { return 8 }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := r.v.get(r.ctx, "/transparency/"+t.Path())
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

func (v *Verifier) load() (State, error) {
	var st State
	if v.StateFile == "" {
		return v.kept, nil
	}
	b, err := os.ReadFile(v.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read what this verifier kept: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s is not what this verifier keeps: %w", v.StateFile, err)
	}
	return st, nil
}

func (v *Verifier) save(st State) error {
	if v.StateFile == "" {
		v.kept = st
		return nil
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := os.MkdirAll(filepath.Dir(v.StateFile), 0o700); err != nil {
		return fmt.Errorf("keep the checkpoint: %w", err)
	}
	tmp := v.StateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("keep the checkpoint: %w", err)
	}
	if err := os.Rename(tmp, v.StateFile); err != nil {
		return fmt.Errorf("keep the checkpoint: %w", err)
	}
	return nil
}

// appOf is the app a bearer token was issued to (its "app" claim), which
// the server wants named with it in X-App-Id.
func appOf(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		App string `json:"app"`
	}
	_ = json.Unmarshal(payload, &claims) // a token the server cannot read either: it says so
	return claims.App
}

// get reads a resource of the server (as the signed-in user, with Token,
// for what is theirs).
func (v *Verifier) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(v.URL, "/")+path, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if v.Token != "" && (strings.HasPrefix(path, "/users/me/") || strings.HasPrefix(path, "/wallets/me/")) {
		req.Header.Set("Authorization", "Bearer "+v.Token)
		req.Header.Set("X-App-Id", appOf(v.Token))
	}
	c := v.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if res.StatusCode == http.StatusNotFound && strings.HasSuffix(path, "/record") {
		return nil, fmt.Errorf("the game is not in the public log (yet): its money is not final, or there is no such game")
	}
	if res.StatusCode == http.StatusNotFound && path == "/reserves" {
		return nil, errors.New("no proof of reserves has been published yet")
	}
	if res.StatusCode == http.StatusNotFound && path == "/users/me/reserves-proof" {
		return nil, errNoShare
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s %s", path, res.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
