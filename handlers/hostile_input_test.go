package handlers_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/web"
)

// The product rule this file checks: bad input gets a clear 4xx JSON error
// with a code and a message, never a 500 and never a partial write. Every
// JSON route of the route table is swept, so new routes are covered
// without changing this file.

// apiRoute is one JSON operation of the route table.
type apiRoute struct {
	method, path string // Echo pattern, e.g. /games/:id
	op           web.Op
}

// otherProtocol are documented routes whose answers follow another
// protocol than the JSON API's error body.
var otherProtocol = map[string]string{
	"/ws":             "a WebSocket handshake: the upgrader answers a non-upgrade request itself",
	"/dev/solana-rpc": "Solana JSON-RPC: errors are JSON-RPC envelopes",
}

// apiRoutes returns every registered route that the OpenAPI document
// describes (pages, /metrics and static files are not in it), less those
// of otherProtocol, ordered by path and method.
func apiRoutes(t *testing.T, a *testApp) []apiRoute {
	t.Helper()
	ops := map[string]web.Op{}
	for _, o := range a.HTTP.Docs.Operations() {
		ops[o.Method+" "+o.Path] = o.Op
	}
	var out []apiRoute
	for _, rt := range a.HTTP.Echo.Routes() {
		if !a.HTTP.Docs.Has(rt.Method, rt.Path) || a.HTTP.Docs.Aliased(rt.Method, rt.Path) || otherProtocol[rt.Path] != "" {
			continue
		}
		op, ok := ops[rt.Method+" "+web.OpenAPIPath(rt.Path)]
		if !ok {
			t.Fatalf("%s %s is documented but not listed by Operations", rt.Method, rt.Path)
		}
		out = append(out, apiRoute{rt.Method, rt.Path, op})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].path != out[j].path {
			return out[i].path < out[j].path
		}
		return out[i].method < out[j].method
	})
	return out
}

var routeParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// params returns the names of a route pattern's path parameters.
func (r apiRoute) params() []string {
	var names []string
	for _, m := range routeParam.FindAllStringSubmatch(r.path, -1) {
		names = append(names, m[1])
	}
	return names
}

// url fills the route pattern's parameters with already-escaped values.
func (r apiRoute) url(values map[string]string) string {
	return routeParam.ReplaceAllStringFunc(r.path, func(p string) string { return values[p[1:]] })
}

// noise returns n characters that do not compress, so that a long value
// really is long for the database too.
func noise(n int) string {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// hostileSegments are path parameter values, escaped as they appear in
// the URL.
var hostileSegments = []string{
	"not-a-uuid", "00000000-0000-0000-0000-000000000000", uuid.NewString(), noise(4096),
	// Spellings that uuid.Parse accepts besides the canonical one.
	"urn:uuid:" + uuid.NewString(), "%7B" + uuid.NewString() + "%7D", strings.ReplaceAll(uuid.NewString(), "-", ""),
	strings.ToUpper(uuid.NewString()),
	"%00", "a%00b", "%FF%FE", "%E2%80%AE%C3%BC%F0%9F%8E%B2", "-1", "9223372036854775808", "1e30",
	"%27%3B--", "..%2F..%2Fetc", "%25", "%20", "_",
}

// hostileQueryValues are query parameter values, escaped.
var hostileQueryValues = []string{
	"", "-1", "0", "abc", "1.5", "1e30", "9223372036854775808", "-9223372036854775809",
	"%00", "ab%00", "%FF", "%25%5F", "a", strings.Repeat("9", 4096), noise(4096), "%E2%80%AE%C3%BC%F0%9F%8E%B2",
}

// Hostile JSON values by the Go type of the field they are sent for: of
// the wrong type, or of the right one but empty, extreme or malformed.
var (
	hostileStrings = []string{`12345`, `{"a":1}`, `""`, `"   "`, `"\u0000"`, `"a\u0000b"`,
		jsonBody(noise(10_000)), jsonBody("ünïcödé \u202e 🎲"), `"\ud800"`, jsonBody("' OR 1=1; --"), jsonBody(`%_\`),
		jsonBody("urn:uuid:" + uuid.NewString())}
	hostileNumbers = []string{`"1"`, `-1`, `1.5`, `1e30`, `-1e30`, `9223372036854775808`,
		`-9223372036854775809`, `1e-7`, `true`, `[1]`}
	hostileBools = []string{`"true"`, `1`, `{}`}
	// hostileRaw is for json.RawMessage fields that the domain decodes
	// itself (game settings, moves).
	hostileRaw = []string{`"x"`, `1e30`, `[]`, `{}`, `null`, `"\u0000"`, jsonBody(noise(10_000)),
		`{"rounds":"x","roundSeconds":{},"column":"x"}`,
		`{"rounds":1e30,"roundSeconds":-1,"column":9223372036854775808}`,
		`{"rounds":-1,"roundSeconds":1e30,"column":-1}`,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000)}
)

// hostileBodies are whole request bodies: malformed, of the wrong kind,
// with only unknown members, too deep or too large.
var hostileBodies = []string{
	"", "null", "[]", `"x"`, "1", "true", "{", "}", "{}{}", `{"a":1} x`, "\x00", "\xff\xfe",
	`{"unknownField":1,"__proto__":{"admin":true},"constructor":null}`,
	strings.Repeat("[", 100_000),
	`{"x":"` + strings.Repeat("a", 1<<20+16) + `"}`, // over the 1 MiB limit
}

// jsonField is a struct field as encoding/json names it.
type jsonField struct {
	name string
	typ  reflect.Type
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// hostileJSON lists hostile JSON values for a field of type t; nested
// objects and lists get one hostile member at a time.
func hostileJSON(t reflect.Type) []string {
	if t == rawMessage {
		return hostileRaw
	}
	switch t.Kind() {
	case reflect.Pointer:
		return append([]string{"null"}, hostileJSON(t.Elem())...)
	case reflect.String:
		return hostileStrings
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return hostileNumbers
	case reflect.Bool:
		return hostileBools
	case reflect.Struct:
		out := []string{`"x"`, `[]`, `1`}
		for _, f := range jsonFields(t) {
			for _, v := range hostileJSON(f.typ) {
				out = append(out, `{`+jsonBody(f.name)+`:`+v+`}`)
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		out := []string{`"x"`, `{}`, `[null]`}
		for _, v := range hostileJSON(t.Elem()) {
			out = append(out, "["+v+"]")
		}
		return out
	case reflect.Map:
		return []string{`"x"`, `[]`, `{"":null}`}
	}
	return []string{`"x"`, `{"a":[1,{"b":null}]}`}
}

// fieldBodies returns bodies of the request type: base with one field
// made hostile at a time, then with every field hostile at once.
func fieldBodies(t *testing.T, req any, base string) []string {
	t.Helper()
	typ := reflect.TypeOf(req)
	if typ.Kind() != reflect.Struct {
		return nil
	}
	with := func(set map[string]string) string {
		obj := map[string]json.RawMessage{}
		if base != "" {
			if err := json.Unmarshal([]byte(base), &obj); err != nil {
				t.Fatalf("base body %s: %v", base, err)
			}
		}
		for k, v := range set {
			obj[k] = json.RawMessage(v)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("body %v: %v", set, err)
		}
		return string(b)
	}
	var out []string
	fields := jsonFields(typ)
	most := 0
	for _, f := range fields {
		vals := hostileJSON(f.typ)
		most = max(most, len(vals))
		for _, v := range vals {
			out = append(out, with(map[string]string{f.name: v}))
		}
	}
	for i := range min(most, 12) {
		all := map[string]string{}
		for _, f := range fields {
			vals := hostileJSON(f.typ)
			all[f.name] = vals[i%len(vals)]
		}
		out = append(out, with(all))
	}
	return out
}

// hostileFailure is a request whose answer broke the rule.
type hostileFailure struct {
	who    string
	route  string
	req    request
	status int
	answer string
	why    string
}

func clip(s string) string {
	const most = 160
	if len(s) <= most {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…(%d bytes)", s[:most], len(s))
}

func (f hostileFailure) String() string {
	var hs []string
	for k, v := range f.req.header {
		if k != "Authorization" || !strings.HasPrefix(v, "Bearer ey") {
			hs = append(hs, k+": "+clip(v))
		}
	}
	sort.Strings(hs)
	return fmt.Sprintf("as %s: %s %s body %s headers [%s] -> %d %s", f.who, f.req.method, clip(f.req.path),
		clip(f.req.body), strings.Join(hs, ", "), f.status, clip(f.answer))
}

// caller is who sends a request: a name for the report and the headers.
type caller struct {
	name string
	auth map[string]string
}

// with returns a copy of h with the entries of more on top.
func with(h map[string]string, more map[string]string) map[string]string {
	out := make(map[string]string, len(h)+len(more))
	for k, v := range h {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

func TestHostileInputGetsAClientErrorFromEveryJSONRoute(t *testing.T) {
	w := newHostileWorld(t)
	a := w.a
	before := a.balances(t, w.user.auth)
	bases := w.bases()

	routes := apiRoutes(t, a)
	known := map[string]bool{}
	for _, rt := range routes {
		known[rt.method+" "+rt.path] = true
	}
	for k := range bases {
		if !known[k] {
			t.Fatalf("a base body names %s, which is not a JSON route", k)
		}
	}

	s := &hostileSweep{a: a, withdrawn: map[string]int64{}}
	start := time.Now()
	for _, rt := range routes {
		s.sweepRoute(t, w, rt, bases)
	}
	elapsed := time.Since(start)
	t.Logf("%d routes, %d requests in %v", len(routes), s.sent, elapsed.Round(time.Millisecond))
	reportHostileFailures(t, s.failures)

	// Nothing was written on the way: the balance moved only by the
	// withdrawals that were answered as such (the books are checked when
	// the app closes).
	want := before
	for _, amount := range s.withdrawn {
		want.available -= amount
	}
	if after := a.balances(t, w.user.auth); after.available != want.available || after.locked != want.locked {
		t.Errorf("platform balance after the sweep: %+v, want %+v (withdrawals answered: %v)", after, want, s.withdrawn)
	}
}

// hostileWorld is what the sweep's requests can name: a user with a
// platform balance and USDC on chain who plays one game, watches another,
// owns a lobby and has been challenged by other, and an admin.
type hostileWorld struct {
	a                 *testApp
	user, other       player
	otherName         string
	adminAuth         map[string]string
	settings          string
	playing, watching string // game ids
	lobby, challenge  string
	intent            string // a prepared transfer of the user's
	spare             string // another token of the user's, for signing out
}

func newHostileWorld(t *testing.T) *hostileWorld {
	t.Helper()
	admin := newWallet(t)
	a := newTestApp(t, map[string]string{"ADMIN_WALLETS": admin.address()})
	adminToken, _ := a.login(t, admin, "agent-1")
	w := &hostileWorld{a: a, adminAuth: bearer(adminToken, "agent-1"), settings: `{"rounds": 1, "roundSeconds": 120}`}

	w.user = a.depositor(t, 2_000_000)
	w.other = a.newPlayer(t)
	w.otherName = a.do(t, request{path: "/users/me", header: w.other.auth}).json(t)["username"].(string)
	table := a.lobby(t, w.other, `{"gameType": "rps", "stakeMinor": 0, "settings": `+w.settings+`}`)
	a.join(t, w.other, table)
	w.playing, _ = a.join(t, w.user, table)["gameId"].(string)
	if w.playing == "" {
		t.Fatal("the user's game did not start")
	}
	_, _, w.watching = a.match(t, w.settings)
	w.lobby = a.lobby(t, w.user, `{"gameType": "rps", "stakeMinor": 0}`)
	r := a.do(t, request{method: http.MethodPost, path: "/challenges", header: w.other.auth,
		body: jsonBody(map[string]any{"toUserId": w.user.id, "gameType": "rps", "stakeMinor": 0})})
	if r.Code != http.StatusCreated {
		t.Fatalf("challenge: %d %s", r.Code, r.Body)
	}
	w.challenge = r.json(t)["id"].(string)
	if r := a.do(t, request{method: http.MethodPost, path: "/dev/faucet",
		body: jsonBody(map[string]any{"address": w.user.address(), "amountMinor": 1_000_000})}); r.Code != 200 {
		t.Fatalf("faucet: %d %s", r.Code, r.Body)
	}
	w.intent = a.prepare(t, w.user.auth, w.other.address(), 10_000)["intentId"].(string)
	// Signing out is swept with a token of its own, so that the first
	// request that gets through does not sign the user out of the rest.
	w.spare, _ = a.login(t, w.user.wallet, "agent-2")
	return w
}

// homesOf returns the existing resources a route's parameters can name,
// so that a body is checked beyond the lookup of its resource.
func (w *hostileWorld) homesOf(rt apiRoute) []map[string]string {
	seg := strings.Split(rt.path, "/")[1]
	switch {
	case strings.Contains(rt.path, ":type"):
		return []map[string]string{{"type": "game", "id": w.watching}, {"type": "dm", "id": w.other.id}}
	case seg == "games":
		return []map[string]string{{"id": w.playing}, {"id": w.watching}}
	case seg == "lobbies":
		return []map[string]string{{"id": w.lobby}}
	case seg == "challenges":
		return []map[string]string{{"id": w.challenge}}
	case seg == "users":
		return []map[string]string{{"id": w.other.id, "username": w.otherName}}
	}
	values := map[string]string{}
	for _, p := range rt.params() {
		values[p] = uuid.NewString()
	}
	return []map[string]string{values}
}

// bases are plausible bodies that the sweep makes hostile one field at a
// time, so that each field is checked past the others.
func (w *hostileWorld) bases() map[string]string {
	user, other := w.user, w.other
	submit := jsonBody(map[string]string{"intentId": w.intent, "signedTransaction": "AAAA"})
	return map[string]string{
		"POST /auth/handshake":              jsonBody(map[string]string{"walletAddress": user.address()}),
		"POST /auth/login-wallet":           jsonBody(map[string]string{"address": user.address(), "signedMessage": "AAAA"}),
		"POST /session":                     jsonBody(map[string]string{"address": user.address(), "signedMessage": "AAAA"}),
		"POST /lobbies":                     `{"gameType": "rps", "stakeMinor": 0, "settings": ` + w.settings + `}`,
		"POST /challenges":                  jsonBody(map[string]any{"toUserId": other.id, "gameType": "rps", "stakeMinor": 0}),
		"POST /games/:id/actions":           `{"type": "move", "move": "rock"}`,
		"POST /games/:id/rematch/lobby":     jsonBody(map[string]string{"lobbyId": w.lobby}),
		"POST /games/:id/donations/prepare": `{"amountMinor": 10000}`,
		"POST /games/:id/donations/submit":  submit,
		"POST /wallets/transfer/prepare":    jsonBody(map[string]any{"toAddress": other.address(), "amountMinor": 10_000}),
		"POST /wallets/transfer/submit":     submit,
		"POST /payments/submit":             submit,
		"POST /wallets/withdraw":            `{"amountMinor": 1}`,
		"POST /dev/faucet":                  jsonBody(map[string]any{"address": other.address(), "amountMinor": 1}),
	}
}

// hostileSweep sends the hostile requests and keeps what their answers
// got wrong, and the withdrawals they made.
type hostileSweep struct {
	a         *testApp
	failures  []hostileFailure
	sent      int
	withdrawn map[string]int64 // withdrawal id -> amount
}

func (s *hostileSweep) send(t *testing.T, who string, rt apiRoute, req request) {
	s.sent++
	res := s.a.do(t, req)
	fail := func(why string) {
		s.failures = append(s.failures, hostileFailure{who, rt.method + " " + rt.path, req, res.Code, res.Body.String(), why})
	}
	switch {
	case res.Code >= 500:
		fail("server error")
	case res.Code >= 400:
		var body struct {
			Code    any `json:"code"`
			Message any `json:"message"`
		}
		if err := json.Unmarshal(res.Body.Bytes(), &body); err != nil {
			fail("error body is not a JSON object")
		} else if c, _ := body.Code.(string); c == "" {
			fail("error body without a code")
		} else if m, _ := body.Message.(string); m == "" {
			fail("error body without a message")
		}
	case rt.method == http.MethodPost && rt.path == "/wallets/withdraw":
		var w struct {
			ID          string
			AmountMinor int64
		}
		if err := json.Unmarshal(res.Body.Bytes(), &w); err != nil || w.ID == "" {
			t.Fatalf("withdrawal answer %s: %v", res.Body, err)
		}
		s.withdrawn[w.ID] = w.AmountMinor // a repeated idempotency key answers the same one
	}
}

// sweepRoute sends one route its hostile requests: without credentials,
// then as each caller it takes, hostile path parameters, bodies, query
// strings and headers.
func (s *hostileSweep) sweepRoute(t *testing.T, w *hostileWorld, rt apiRoute, bases map[string]string) {
	key := rt.method + " " + rt.path
	base, hasBase := bases[key]
	plain := base
	if !hasBase && rt.op.Request != nil {
		plain = "{}"
	}
	who := []caller{{"user", w.user.auth}}
	if key == "POST /auth/logout" {
		who = []caller{{"user", bearer(w.spare, "agent-2")}}
	}
	if rt.op.Auth == web.AuthAdmin {
		who = append(who, caller{"admin", w.adminAuth})
	}
	homes := w.homesOf(rt)

	// Without credentials.
	s.send(t, "anonymous", rt, request{method: rt.method, path: rt.url(homes[0]), body: plain})

	for _, c := range who {
		// Path parameters: one hostile at a time, the others real.
		for _, p := range rt.params() {
			for _, seg := range hostileSegments {
				values := with(homes[0], map[string]string{p: seg})
				s.send(t, c.name, rt, request{method: rt.method, path: rt.url(values), body: plain, header: c.auth})
			}
		}

		// Bodies, at each resource the route can name; a route that
		// reads none must ignore one.
		bodies := []string{"{", "null"}
		if rt.op.Request != nil {
			bodies = append(append([]string{}, hostileBodies...), fieldBodies(t, rt.op.Request, base)...)
		}
		for _, home := range homes {
			for _, b := range bodies {
				s.send(t, c.name, rt, request{method: rt.method, path: rt.url(home), body: b, header: c.auth})
			}
		}

		// Query strings: documented parameters one at a time, then
		// the usual paging names all at once.
		path := rt.url(homes[0])
		for _, q := range rt.op.Query {
			for _, v := range hostileQueryValues {
				s.send(t, c.name, rt, request{method: rt.method, path: path + "?" + q.Name + "=" + v, body: plain, header: c.auth})
			}
		}
		s.send(t, c.name, rt, request{method: rt.method, body: plain, header: c.auth,
			path: path + "?limit=abc&before=-1&after=%00&cursor=%FF&offset=1e30&username=%00&page=-1"})

		// Headers.
		for _, h := range []map[string]string{
			{"X-App-Id": noise(10_000)}, {"X-App-Id": "ünï🎲"}, {"X-App-Id": " "},
			{"X-App-Id": "\xff\xfe"}, {"Idempotency-Key": noise(10_000)}, {"Idempotency-Key": "ünï🎲"},
			{"Idempotency-Key": "\xff\xfe"}, {"Authorization": "Bearer " + noise(10_000)}, {"Authorization": "Basic Zm9vOmJhcg=="},
			{"Authorization": "Bearer"}, {"X-SDK-Version": noise(10_000)}, {"X-SDK-Version": "1.0.0-ünï"},
		} {
			s.send(t, c.name, rt, request{method: rt.method, path: path, body: plain, header: with(c.auth, h)})
		}
	}
}

// reportHostileFailures reports a few examples of each kind of failure
// per route.
func reportHostileFailures(t *testing.T, failures []hostileFailure) {
	t.Helper()
	groups := map[string][]hostileFailure{}
	var order []string
	for _, f := range failures {
		k := fmt.Sprintf("%s: %s (%d)", f.route, f.why, f.status)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], f)
	}
	for _, k := range order {
		fs := groups[k]
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d requests, for example:", k, len(fs))
		for _, f := range fs[:min(len(fs), 3)] {
			b.WriteString("\n\t" + f.String())
		}
		t.Error(b.String())
	}
}
