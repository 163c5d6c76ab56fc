package web_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"wager/chain"
	"wager/domain"
	"wager/domain/auth"
	"wager/domain/eventlog"
	"wager/domain/game"
	"wager/domain/settlement"
	"wager/web"
	"wager/web/openapitest"
)

// document builds the document of ops (keyed "METHOD /echo/path"), checks
// it like the server's own, and returns it decoded.
func document(t *testing.T, ops map[string]web.Op) map[string]any {
	t.Helper()
	o := web.NewOpenAPI("Test", "1.0.0", "A test API.")
	o.Schemas["GameSettings"] = map[string]any{"type": "object"}
	for k, op := range ops {
		method, path, _ := strings.Cut(k, " ")
		o.Add(method, path, op)
		o.Tags[op.Tag] = "the operations on " + op.Tag
	}
	raw := openapitest.Check(t, o)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// at returns the value at a path of keys in a decoded document.
func at(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %v is not an object", strings.Join(keys, "."), v)
		}
		if v, ok = m[k]; !ok {
			t.Fatalf("%s: no %q in %v", strings.Join(keys, "."), k, m)
		}
	}
	return v
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSchemaNamesArePackageQualified(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{game.Challenge{}, "GameChallenge"},
		{auth.Challenge{}, "AuthChallenge"},
		{domain.Event{}, "DomainEvent"},
		{settlement.Transfer{}, "PotTransfer"},
		{chain.Transfer{}, "ChainTransfer"},
		{web.Metrics{}, "WebMetrics"},
		{game.Metrics{}, "GameMetrics"},
		{settlement.Pot{}, "Pot"},                    // the package's name is not repeated
		{web.Operation{}, "WebOperation"},            //
		{Challenge{}, "WebTestChallenge"},            // a test package's types
		{Paged[domain.Event]{}, "WebTestPagedEvent"}, // a generic type with its argument
	} {
		if got := web.SchemaName(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("SchemaName(%T) = %q, want %q", c.v, got, c.want)
		}
	}

	doc := document(t, map[string]web.Op{
		"POST /challenges":        {Tag: "games", Request: Item{}, Response: game.Challenge{}},
		"POST /auth/handshake":    {Tag: "auth", Response: auth.Challenge{}},
		"GET /domain/events":      {Tag: "games", Response: []domain.Event{}},
		"GET /games/:id/transfer": {Tag: "games", Response: settlement.Transfer{}},
		"GET /chain/transfer":     {Tag: "dev", Response: chain.Transfer{}},
	})
	schemas := at(t, doc, "components", "schemas").(map[string]any)
	for _, name := range []string{"GameChallenge", "AuthChallenge", "DomainEvent", "PotTransfer", "ChainTransfer"} {
		if schemas[name] == nil {
			t.Errorf("no schema %s; have %v", name, keys(schemas))
		}
	}
	if _, ok := at(t, doc, "components", "schemas", "AuthChallenge", "properties").(map[string]any)["Nonce"]; !ok {
		t.Errorf("AuthChallenge is not auth.Challenge: %s", asJSON(schemas["AuthChallenge"]))
	}
	if _, ok := at(t, doc, "components", "schemas", "GameChallenge", "properties").(map[string]any)["fromUserId"]; !ok {
		t.Errorf("GameChallenge is not game.Challenge: %s", asJSON(schemas["GameChallenge"]))
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Challenge is named like web.TestChallenge: WebTestChallenge.
type Challenge struct {
	ID string `json:"id"`
}

type Paged[T any] struct {
	Items []T `json:"items"`
}

// wantPanic runs f and returns what it panicked with, failing t when it
// did not.
func wantPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		p := recover()
		if p == nil {
			t.Fatal("no panic")
		}
		msg, _ = p.(string)
	}()
	f()
	return ""
}

// TestIDsThatAreNotStringsFailTheRules: an id sent as a number, a ?before=
// cursor that is a number and a tag without a description break the
// document's rules (API.md "Conventions"); an id with the string option
// passes.
func TestIDsThatAreNotStringsFailTheRules(t *testing.T) {
	type numbered struct {
		ID     int64 `json:"id"`
		GameID int64 `json:"gameId"`
	}
	type stringed struct {
		ID int64 `json:"id,string"`
	}
	o := web.NewOpenAPI("Test", "1.0.0", "")
	o.Add(http.MethodGet, "/things", web.Op{Tag: "things", Response: []numbered{},
		Query: []web.Param{{Name: "before", Type: "integer"}}})
	o.Add(http.MethodGet, "/others/:id", web.Op{Tag: "things", Response: stringed{}})
	var doc any
	if err := json.Unmarshal(func() []byte { b, _ := json.Marshal(o.Document()); return b }(), &doc); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, err := range openapitest.Rules(o, doc) {
		msgs = append(msgs, err.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"property id is an id", "property gameId is an id", "?before= is an id", "tag things has no description"} {
		if !strings.Contains(all, want) {
			t.Errorf("the rules miss %q:\n%s", want, all)
		}
	}
	if strings.Count(all, "property id is an id") != 1 {
		t.Errorf("an id with the string option was refused:\n%s", all)
	}
}

func TestTwoTypesOfOneSchemaNameFailTheDocument(t *testing.T) {
	o := web.NewOpenAPI("Test", "1.0.0", "")
	o.Add(http.MethodGet, "/a", web.Op{Response: Challenge{}})
	o.Add(http.MethodGet, "/b", web.Op{Response: web.TestChallenge{}})
	msg := wantPanic(t, func() { o.Document() })
	if !strings.Contains(msg, "WebTestChallenge") {
		t.Errorf("panic %q does not name the schema", msg)
	}
}

func TestOperationIDs(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/games/{id}/state", "getGamesByIdState"},
		{"POST", "/auth/login-wallet", "postAuthLoginWallet"},
		{"DELETE", "/games/{id}/market/orders/{orderId}", "deleteGamesByIdMarketOrdersByOrderId"},
		{"GET", "/openapi.json", "getOpenapiJson"},
		{"GET", "/service_check_maintenance", "getServiceCheckMaintenance"},
	} {
		if got := web.OperationID(c.method, c.path); got != c.want {
			t.Errorf("OperationID(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
	doc := document(t, map[string]web.Op{
		"GET /games/:id": {Tag: "games"},
		"GET /games":     {Tag: "games", ID: "listGames"},
	})
	if id := at(t, doc, "paths", "/games/{id}", "get", "operationId"); id != "getGamesById" {
		t.Errorf("derived operationId %v", id)
	}
	if id := at(t, doc, "paths", "/games", "get", "operationId"); id != "listGames" {
		t.Errorf("given operationId %v", id)
	}

	o := web.NewOpenAPI("Test", "1.0.0", "")
	o.Add(http.MethodGet, "/login-wallet", web.Op{})
	o.Add(http.MethodGet, "/login_wallet", web.Op{})
	if msg := wantPanic(t, func() { o.Document() }); !strings.Contains(msg, "getLoginWallet") {
		t.Errorf("panic %q does not name the operationId", msg)
	}
}

// Body has the kinds of fields whose schemas the rules are about.
type Body struct {
	Settings json.RawMessage  `json:"settings"`
	Move     json.RawMessage  `json:"move,omitempty" doc:"game-specific"`
	Result   *json.RawMessage `json:"result"`
	Data     json.RawMessage  `json:"data" type:"object"`
	Any      any              `json:"any"`
	Map      map[string]any   `json:"map"`
	Bytes    []byte           `json:"bytes"`
	List     []string         `json:"list"`
	Items    []Item           `json:"items,omitempty"`
	Maybe    []*Item          `json:"maybe"`
	Winner   *string          `json:"winnerId"`
	EndedAt  *time.Time       `json:"endedAt,omitempty"`
	Best     *Item            `json:"best" doc:"the best item, null when none"`
	Count    uint32           `json:"count,string"`
	Status   string           `json:"status" enum:"open,closed"`
	Closed   *string          `json:"closedBy" enum:"admin,timer"`
	Text     string           `json:"text" minLength:"1" maxLength:"500" pattern:"^\\S"`
	Amount   int64            `json:"amountMinor" minimum:"10000"`
	Embedded
	//lint:ignore U1000 an unexported field, which the schema must leave out
	hidden string
}

type Embedded struct {
	Seq int `json:"seq"`
}

type Item struct {
	Name string `json:"name"`
}

func TestSchemasOfFreeFormNullableAndLists(t *testing.T) {
	doc := document(t, map[string]web.Op{"POST /things": {Tag: "things", Response: Body{}, Request: Request{}}})
	props := at(t, doc, "components", "schemas", "WebTestBody", "properties").(map[string]any)
	for name, want := range map[string]string{
		"settings":    `{}`,
		"move":        `{"description":"game-specific"}`,
		"result":      `{}`,
		"data":        `{"additionalProperties":{},"type":"object"}`,
		"any":         `{}`,
		"map":         `{"additionalProperties":{},"type":"object"}`,
		"bytes":       `{"contentEncoding":"base64","type":"string"}`,
		"list":        `{"items":{"type":"string"},"type":"array"}`,
		"items":       `{"items":{"$ref":"#/components/schemas/WebTestItem"},"type":"array"}`,
		"maybe":       `{"items":{"oneOf":[{"$ref":"#/components/schemas/WebTestItem"},{"type":"null"}]},"type":"array"}`,
		"winnerId":    `{"type":["string","null"]}`,
		"endedAt":     `{"format":"date-time","type":"string"}`,
		"best":        `{"description":"the best item, null when none","oneOf":[{"$ref":"#/components/schemas/WebTestItem"},{"type":"null"}]}`,
		"count":       `{"type":"string"}`,
		"status":      `{"enum":["open","closed"],"type":"string"}`,
		"closedBy":    `{"enum":["admin","timer",null],"type":["string","null"]}`,
		"text":        `{"maxLength":500,"minLength":1,"pattern":"^\\S","type":"string"}`,
		"amountMinor": `{"format":"int64","minimum":10000,"type":"integer"}`,
		"seq":         `{"format":"int64","type":"integer"}`,
	} {
		if got := asJSON(props[name]); got != want {
			t.Errorf("%s: got %s, want %s", name, got, want)
		}
	}
	if _, ok := props["hidden"]; ok {
		t.Error("an unexported field is documented")
	}
	required := asJSON(at(t, doc, "components", "schemas", "WebTestBody", "required"))
	for _, name := range []string{"settings", "result", "winnerId", "best", "seq"} {
		if !strings.Contains(required, `"`+name+`"`) {
			t.Errorf("%s is always in the answer but not required: %s", name, required)
		}
	}
	for _, name := range []string{"move", "items", "endedAt"} {
		if strings.Contains(required, `"`+name+`"`) {
			t.Errorf("%s is omitted when empty but required: %s", name, required)
		}
	}

	// In a request a pointer tells a missing field from a zero one: the
	// field is required when it has no omitempty, and never null.
	req := at(t, doc, "components", "schemas", "WebTestRequest").(map[string]any)
	if got := asJSON(req["properties"].(map[string]any)["enabled"]); got != `{"type":"boolean"}` {
		t.Errorf("request pointer: %s", got)
	}
	if got := asJSON(req["required"]); got != `["enabled"]` {
		t.Errorf("request required: %s", got)
	}
}

type Request struct {
	Enabled *bool   `json:"enabled"`
	Note    *string `json:"note,omitempty"`
}

func TestATypeBothSentAndReceivedWithABarePointerFailsTheDocument(t *testing.T) {
	o := web.NewOpenAPI("Test", "1.0.0", "")
	o.Add(http.MethodPut, "/flag", web.Op{Request: Request{}, Response: Request{}})
	if msg := wantPanic(t, func() { o.Document() }); !strings.Contains(msg, "WebTestRequest") && !strings.Contains(msg, "web_test.Request") {
		t.Errorf("panic %q does not name the type", msg)
	}
}

func TestStatusesParametersAndBodies(t *testing.T) {
	min := web.Bound(0)
	doc := document(t, map[string]web.Op{
		"GET /games/:id/events": {Tag: "games", Auth: web.AuthRequired, Response: []eventlog.Event{},
			Query: []web.Param{{Name: "after", Type: "integer", Min: min, Description: "the last seq you have"}, web.PageLimit,
				{Name: "order", Enum: []string{"asc", "desc"}, Default: "asc"}}},
		"GET /users/me/current-game": {Tag: "games", Auth: web.AuthRequired, Response: game.CurrentGame{},
			Responses: map[int]any{http.StatusNoContent: nil}},
		"POST /users/me/avatar": {Tag: "users", Auth: web.AuthRequired, Response: Item{},
			Upload: &web.Upload{Field: "file", Types: []string{"image/png", "image/jpeg"}}},
		"PUT /admin/feature-flags/:name": {Tag: "admin", Auth: web.AuthAdmin, Request: Request{}, Response: Item{},
			PathParams: []web.Param{{Name: "name", Pattern: "^[a-z-]+$"}}},
		"GET /images/:id": {Tag: "users", Produces: []string{"image/png", "image/jpeg"}},
		"POST /withdraw": {Tag: "wallet", Auth: web.AuthRequired, Request: Item{}, Response: Item{},
			Responses: map[int]any{http.StatusAccepted: Item{}},
			Header:    []web.Param{{Name: "Idempotency-Key", MaxLength: 255}}},
	})
	statuses := func(path, method string) string {
		var got []string
		for s := range at(t, doc, "paths", path, method, "responses").(map[string]any) {
			got = append(got, s)
		}
		sort.Strings(got)
		return strings.Join(got, " ")
	}
	for _, c := range []struct{ path, method, want string }{
		{"/games/{id}/events", "get", "200 400 401 404 default"},
		{"/users/me/current-game", "get", "200 204 400 401 default"},
		{"/users/me/avatar", "post", "200 400 401 403 413 default"},
		{"/admin/feature-flags/{name}", "put", "200 400 401 403 404 413 default"},
		{"/images/{id}", "get", "200 404 default"},
		{"/withdraw", "post", "200 202 400 401 403 413 default"},
	} {
		if got := statuses(c.path, c.method); got != c.want {
			t.Errorf("%s %s answers %s, want %s", c.method, c.path, got, c.want)
		}
	}
	if got := asJSON(at(t, doc, "paths", "/users/me/current-game", "get", "responses", "204")); got != `{"description":"No Content"}` {
		t.Errorf("204: %s", got)
	}
	params := asJSON(at(t, doc, "paths", "/games/{id}/events", "get", "parameters"))
	for _, want := range []string{
		`{"$ref":"#/components/parameters/SDKVersion"}`,
		`{"description":"an id exactly as a response gave it","in":"path","name":"id","required":true,"schema":{"type":"string"}}`,
		`{"description":"the last seq you have","in":"query","name":"after","required":false,"schema":{"format":"int64","minimum":0,"type":"integer"}}`,
		`{"description":"page size","in":"query","name":"limit","required":false,"schema":{"default":50,"format":"int64","maximum":200,"minimum":1,"type":"integer"}}`,
		`{"in":"query","name":"order","required":false,"schema":{"default":"asc","enum":["asc","desc"],"type":"string"}}`,
	} {
		if !strings.Contains(params, want) {
			t.Errorf("parameters lack %s: %s", want, params)
		}
	}
	if got := asJSON(at(t, doc, "paths", "/admin/feature-flags/{name}", "put", "parameters")); !strings.Contains(got,
		`{"in":"path","name":"name","required":true,"schema":{"pattern":"^[a-z-]+$","type":"string"}}`) {
		t.Errorf("path parameter rules: %s", got)
	}
	if got := asJSON(at(t, doc, "paths", "/withdraw", "post", "parameters")); !strings.Contains(got,
		`{"in":"header","name":"Idempotency-Key","required":false,"schema":{"maxLength":255,"type":"string"}}`) {
		t.Errorf("header parameter: %s", got)
	}
	upload := asJSON(at(t, doc, "paths", "/users/me/avatar", "post", "requestBody"))
	if want := `{"content":{"multipart/form-data":{` +
		`"schema":{"properties":{"file":{"contentMediaType":"application/octet-stream","description":"the file: image/png, image/jpeg","format":"binary","type":"string"}},"required":["file"],"type":"object"}}},"required":true}`; upload != want {
		t.Errorf("upload body:\n got %s\nwant %s", upload, want)
	}
	if got := asJSON(at(t, doc, "paths", "/images/{id}", "get", "responses", "200", "content")); !strings.Contains(got, `"image/png":{"schema":{"contentMediaType":"image/png","type":"string"}}`) {
		t.Errorf("image answer: %s", got)
	}
	if got := asJSON(at(t, doc, "paths", "/users/me/avatar", "post", "security")); got != `[{"appId":[],"bearer":[]},{"session":[]}]` {
		t.Errorf("security: %s", got)
	}
	if got := asJSON(at(t, doc, "paths", "/games/{id}/events", "get", "responses", "404")); got != `{"$ref":"#/components/responses/NotFoundError"}` {
		t.Errorf("404: %s", got)
	}
}
