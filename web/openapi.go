package web

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Auth says what authentication a route needs (SPEC.md "Auth column").
type Auth string

// Authentication requirements of a route.
const (
	AuthNone     Auth = "none"     // public; credentials are ignored
	AuthOptional Auth = "optional" // works without a token; uses it when valid
	AuthRequired Auth = "required" // bearer token (or browser session) needed
	AuthAdmin    Auth = "admin"    // an admin's token needed
)

// Param documents a query, path or header parameter. Its schema is a
// string unless Type says otherwise; the other fields are schema rules
// that apply when set.
type Param struct {
	Name, Description string
	Required          bool

	Type                 string   // "integer", "boolean" or "string" (when empty)
	Min, Max             *int64   // bounds of an integer (see Bound)
	MinLength, MaxLength int      // bounds of a string's length
	Pattern              string   // a string's regular expression
	Enum                 []string // the only values allowed
	Default              any      // the value when the parameter is absent
}

// Bound returns n for Param.Min and Param.Max.
func Bound(n int64) *int64 { return &n }

// PageLimit is the ?limit= of a list: 1-200, default 50.
var PageLimit = Param{Name: "limit", Description: "page size", Type: "integer",
	Min: Bound(1), Max: Bound(200), Default: 50}

// PageBefore is the ?before= cursor of a list: the id (a string, like
// every id) of the last item of the previous page.
func PageBefore(description string) Param {
	return Param{Name: "before", Description: description, MaxLength: 200}
}

// Upload documents a multipart/form-data request body that carries one
// file.
type Upload struct {
	Field string   // the form field of the file
	Types []string // media types accepted; any when empty
}

// Op documents one JSON operation. Request and Response are zero values of
// the body types (nil for none); their schemas come from reflection over
// the json tags, so the document follows the code.
type Op struct {
	Summary     string
	Description string
	Tag         string
	Auth        Auth
	Query       []Param
	Request     any
	Response    any
	Status      int   // success status; 200 when zero
	Errors      []int // documented error statuses besides the ones derived from the operation

	ID         string      // operationId; derived from the method and path when empty
	PathParams []Param     // rules of path parameters, by name; a string each otherwise
	Header     []Param     // request headers the operation reads
	Upload     *Upload     // a multipart/form-data body (Request stays nil)
	Responses  map[int]any // other success answers: status -> body type (nil: no body)
	Produces   []string    // media types of a success body that is not JSON (bytes)
	// ETag says the success answer carries an ETag and that a request
	// whose If-None-Match names it is answered 304 without a body.
	ETag bool
}

// OpenAPI collects operations and renders an OpenAPI 3.1 document.
type OpenAPI struct {
	Title, Version, Description string
	// Tags describes each tag the operations use.
	Tags map[string]string
	// Schemas are named schemas that fields refer to with the struct tag
	// schema:"Name" (a game type's settings), added to the components,
	// and Components Go types whose schemas are added too (the live
	// socket's event data, for generated clients).
	Schemas    map[string]any
	Components []any

	ops     map[string]map[string]Op // path -> method -> op
	aliases map[string]bool          // "METHOD /openapi/path" served but documented under another path
}

// NewOpenAPI returns an empty document.
func NewOpenAPI(title, version, description string) *OpenAPI {
	return &OpenAPI{Title: title, Version: version, Description: description,
		Tags: map[string]string{}, Schemas: map[string]any{}, ops: map[string]map[string]Op{},
		aliases: map[string]bool{}}
}

var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// OpenAPIPath converts an Echo route pattern (/games/:id) to OpenAPI's
// (/games/{id}).
func OpenAPIPath(echoPath string) string { return echoParam.ReplaceAllString(echoPath, "{$1}") }

// Add documents the operation at an Echo route pattern.
func (o *OpenAPI) Add(method, echoPath string, op Op) {
	p := OpenAPIPath(echoPath)
	if o.ops[p] == nil {
		o.ops[p] = map[string]Op{}
	}
	o.ops[p][strings.ToLower(method)] = op
}

// Alias records that an Echo route pattern serves an operation documented
// under another path (whose description should say so): kept out of the
// document where its path would be ambiguous with others.
func (o *OpenAPI) Alias(method, echoPath string) {
	o.aliases[strings.ToUpper(method)+" "+OpenAPIPath(echoPath)] = true
}

// Aliased reports whether an Echo route pattern is an Alias.
func (o *OpenAPI) Aliased(method, echoPath string) bool {
	return o.aliases[strings.ToUpper(method)+" "+OpenAPIPath(echoPath)]
}

// Has reports whether the operation at an Echo route pattern is documented
// (or an Alias of one).
func (o *OpenAPI) Has(method, echoPath string) bool {
	_, ok := o.ops[OpenAPIPath(echoPath)][strings.ToLower(method)]
	return ok || o.aliases[strings.ToUpper(method)+" "+OpenAPIPath(echoPath)]
}

// Operation is a documented operation, flattened for listing.
type Operation struct {
	Method, Path string
	Op
}

// Operations returns every documented operation ordered by tag, path and
// method.
func (o *OpenAPI) Operations() []Operation {
	var out []Operation
	for p, byMethod := range o.ops {
		for m, op := range byMethod {
			out = append(out, Operation{Method: strings.ToUpper(m), Path: p, Op: op})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Tag != b.Tag {
			return a.Tag < b.Tag
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Method < b.Method
	})
	return out
}

// pathParam matches the parameters of an OpenAPI path (/games/{id}).
var pathParam = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// OperationID returns the operationId derived from a method and an OpenAPI
// path: the method, then each segment in PascalCase, a parameter as By and
// its name. GET /games/{id}/state is getGamesByIdState.
func OperationID(method, openAPIPath string) string {
	id := strings.ToLower(method)
	for _, seg := range strings.Split(openAPIPath, "/") {
		if m := pathParam.FindStringSubmatch(seg); m != nil {
			id += "By" + pascal(m[1])
		} else {
			id += pascal(seg)
		}
	}
	return id
}

// pascal joins the words of s (split at anything but letters and digits)
// with their first letters in upper case: login-wallet is LoginWallet.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune(w)
		b.WriteString(string(unicode.ToUpper(r[0])) + string(r[1:]))
	}
	return b.String()
}

// Document renders the OpenAPI 3.1 document as a JSON-ready value. It
// panics when two operations would share an operationId or two Go types a
// schema name: a document that clients generate code from must not be
// ambiguous.
func (o *OpenAPI) Document() map[string]any {
	r := newReflector()
	for name, schema := range o.Schemas {
		r.schemas[name], r.types[name] = schema, nil
	}
	for _, c := range o.Components {
		r.schema(reflect.TypeOf(c), response)
	}
	paths := map[string]any{}
	ids := map[string]string{}
	tags := map[string]bool{}
	for _, op := range o.Operations() {
		id := op.ID
		if id == "" {
			id = OperationID(op.Method, op.Path)
		}
		if other, dup := ids[id]; dup {
			panic(fmt.Sprintf("openapi: %s %s and %s share the operationId %q", op.Method, op.Path, other, id))
		}
		ids[id] = op.Method + " " + op.Path
		if paths[op.Path] == nil {
			paths[op.Path] = map[string]any{}
		}
		paths[op.Path].(map[string]any)[strings.ToLower(op.Method)] = r.operation(id, op)
		if op.Tag != "" {
			tags[op.Tag] = true
		}
	}
	var tagList []any
	for _, t := range sortedKeys(tags) {
		tag := map[string]any{"name": t}
		if d := o.Tags[t]; d != "" {
			tag["description"] = d
		}
		tagList = append(tagList, tag)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": o.Title, "version": o.Version, "description": o.Description,
			"license": map[string]any{"name": "Proprietary"}},
		// Relative: the server that serves the document is the one it
		// describes, at whatever address it was reached.
		"servers": []any{map[string]any{"url": "/", "description": "the server that serves this document"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas":    r.schemas,
			"responses":  r.responses,
			"parameters": map[string]any{"SDKVersion": sdkVersionParam},
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "Token from POST /auth/login-wallet; send X-App-Id with it."},
				"appId": map[string]any{"type": "apiKey", "in": "header", "name": "X-App-Id",
					"description": "The app the token was issued to; required with a bearer token (400 APP_ID_REQUIRED without it)."},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": SessionCookie,
					"description": "The browser session of POST /session; state changes also need the X-CSRF-Token header."},
			},
		},
	}
	if tagList != nil {
		doc["tags"] = tagList
	}
	return doc
}

var sdkVersionParam = map[string]any{"name": "X-SDK-Version", "in": "header",
	"description": "The client's SDK version (semver). Below the minimum: 426; not semver: 400. Browser pages are not checked.",
	"schema":      map[string]any{"type": "string", "pattern": `^\d+\.\d+\.\d+`, "examples": []any{"1.0.0"}}}

// errorSchema is the body of every error answer.
var errorSchema = map[string]any{
	"type":     "object",
	"required": []string{"code", "message"},
	"properties": map[string]any{
		"code":            map[string]any{"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$", "description": "UPPER_SNAKE error code"},
		"message":         map[string]any{"type": "string", "description": "for people"},
		"fields":          map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}, "description": "VALIDATION_ERROR: the reason of each invalid field"},
		"requestId":       map[string]any{"type": "string"},
		"minSdkVersion":   map[string]any{"type": "string", "description": "SDK_VERSION_OUTDATED: the version to upgrade to"},
		"paymentRequired": map[string]any{"type": "object", "additionalProperties": map[string]any{}, "description": "PAYMENT_REQUIRED: the x402 PaymentRequired to pay (also in the PAYMENT-REQUIRED header)"},
	},
	"description": "Code-specific members may accompany code and message.",
}

// errorCodes says which codes each error status carries.
var errorCodes = map[int]string{
	http.StatusBadRequest:            "VALIDATION_ERROR (with fields), INVALID_JSON, INVALID_MOVE, INVALID_SDK_VERSION or APP_ID_REQUIRED",
	http.StatusUnauthorized:          "UNAUTHORIZED (missing, malformed, expired or forged credentials)",
	http.StatusPaymentRequired:       "PAYMENT_REQUIRED (with paymentRequired; pay with /payments and repeat with PAYMENT-SIGNATURE)",
	http.StatusForbidden:             "FORBIDDEN, NOT_A_PLAYER, ADMIN_ONLY, LINKED_TO_PLAYER, CONFLICT_OF_INTEREST, ... (authenticated but not allowed)",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusConflict:              "CONFLICT, GAME_NOT_ACTIVE, NOT_YOUR_TURN, ALREADY_MOVED, INSUFFICIENT_FUNDS, ... (the state forbids it)",
	http.StatusRequestEntityTooLarge: "PAYLOAD_TOO_LARGE",
	http.StatusUnsupportedMediaType:  "UNSUPPORTED_MEDIA_TYPE",
	http.StatusUpgradeRequired:       "SDK_VERSION_OUTDATED (with minSdkVersion)",
	http.StatusTooManyRequests:       "RATE_LIMITED (with Retry-After)",
	http.StatusServiceUnavailable:    "MAINTENANCE (with Retry-After) or UNAVAILABLE",
}

func (r *reflector) operation(id string, op Operation) map[string]any {
	out := map[string]any{"operationId": id}
	if op.Summary != "" {
		out["summary"] = op.Summary
	}
	if op.Tag != "" {
		out["tags"] = []string{op.Tag}
	}
	if op.Description != "" {
		out["description"] = op.Description
	}
	rules := map[string]Param{}
	for _, p := range op.PathParams {
		rules[p.Name] = p
	}
	params := []any{map[string]any{"$ref": "#/components/parameters/SDKVersion"}}
	for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
		p, ok := rules[m[1]]
		if !ok {
			p = Param{Name: m[1]}
		}
		if p.Description == "" && (p.Name == "id" || strings.HasSuffix(p.Name, "Id")) {
			p.Description = "an id exactly as a response gave it"
		}
		params = append(params, p.parameter("path", true, p.schema()))
	}
	for _, q := range op.Query {
		params = append(params, q.parameter("query", q.Required, q.schema()))
	}
	for _, h := range op.Header {
		params = append(params, h.parameter("header", h.Required, h.schema()))
	}
	if op.ETag {
		params = append(params, Param{Name: "If-None-Match",
			Description: "the ETag of the answer you have: 304 without a body while it is still current"}.parameter("header", false, map[string]any{"type": "string"}))
	}
	out["parameters"] = params

	bearer := map[string]any{"bearer": []string{}, "appId": []string{}}
	session := map[string]any{"session": []string{}}
	switch op.Auth {
	case AuthRequired, AuthAdmin:
		out["security"] = []any{bearer, session}
	case AuthOptional:
		out["security"] = []any{bearer, session, map[string]any{}}
	default:
		out["security"] = []any{} // public: credentials are not needed
	}

	switch {
	case op.Upload != nil:
		// The part's media types are said in words, not as an encoding
		// object, which ogen does not generate with its default options.
		file := map[string]any{"type": "string", "format": "binary", "contentMediaType": "application/octet-stream"}
		if len(op.Upload.Types) > 0 {
			file["description"] = "the file: " + strings.Join(op.Upload.Types, ", ")
		}
		media := map[string]any{"schema": map[string]any{"type": "object", "required": []string{op.Upload.Field},
			"properties": map[string]any{op.Upload.Field: file}}}
		out["requestBody"] = map[string]any{"required": true, "content": map[string]any{"multipart/form-data": media}}
	case op.Request != nil:
		out["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": r.schema(reflect.TypeOf(op.Request), request)}}}
	}

	status := op.Status
	if status == 0 {
		status = http.StatusOK
	}
	ok := r.success(status, op.Response, op.Produces)
	responses := map[string]any{strconv.Itoa(status): ok}
	for s, body := range op.Responses {
		responses[strconv.Itoa(s)] = r.success(s, body, nil)
	}
	if op.ETag {
		ok["headers"] = map[string]any{"ETag": map[string]any{"description": "names this version of the answer, for If-None-Match",
			"schema": map[string]any{"type": "string"}}}
		responses[strconv.Itoa(http.StatusNotModified)] = map[string]any{"description": "Not Modified: the answer named by If-None-Match is still current"}
	}
	for _, s := range op.errorStatuses() {
		if _, taken := responses[strconv.Itoa(s)]; !taken {
			responses[strconv.Itoa(s)] = r.errorResponse(s)
		}
	}
	if _, ok := r.responses["Error"]; !ok {
		r.responses["Error"] = map[string]any{"description": "Any other error", "content": errorContent}
	}
	responses["default"] = map[string]any{"$ref": "#/components/responses/Error"}
	out["responses"] = responses
	return out
}

// OneOf is a body that is one of several types told apart by the value
// of a property they all have (a game's state is the view of its game
// type, by gameType), for Op.Response: the document's oneOf carries the
// discriminator, so that generated clients pick the type without trying
// each.
type OneOf struct {
	Property string         // the discriminating property
	Types    map[string]any // a body of each type, by the property's value
}

// success documents a success answer and its body.
func (r *reflector) success(status int, body any, produces []string) map[string]any {
	out := map[string]any{"description": http.StatusText(status)}
	if one, ok := body.(OneOf); ok {
		var schemas []any
		mapping := map[string]any{}
		for _, value := range slices.Sorted(maps.Keys(one.Types)) {
			s := r.schema(reflect.TypeOf(one.Types[value]), response)
			schemas = append(schemas, s)
			mapping[value] = s["$ref"]
		}
		out["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"oneOf": schemas,
			"discriminator": map[string]any{"propertyName": one.Property, "mapping": mapping}}}}
		return out
	}
	switch {
	case len(produces) > 0:
		content := map[string]any{}
		for _, m := range produces {
			content[m] = map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": m}}
		}
		out["content"] = content
	case body != nil && status != http.StatusNoContent:
		out["content"] = map[string]any{"application/json": map[string]any{"schema": r.schema(reflect.TypeOf(body), response)}}
	}
	return out
}

// errorStatuses are the error statuses the operation declares and those
// that follow from its shape: 400 where input is checked, 401 and 403
// where credentials are, 404 where a path names a resource, 413 where a
// body is read.
func (op Operation) errorStatuses() []int {
	set := map[int]bool{}
	for _, s := range op.Errors {
		set[s] = true
	}
	body := op.Request != nil || op.Upload != nil
	authn := op.Auth == AuthOptional || op.Auth == AuthRequired || op.Auth == AuthAdmin
	if body || len(op.Query) > 0 || authn {
		set[http.StatusBadRequest] = true
	}
	if authn {
		set[http.StatusUnauthorized] = true
	}
	if op.Auth == AuthAdmin || (authn && op.Method != http.MethodGet && op.Method != http.MethodHead) {
		set[http.StatusForbidden] = true // not an admin; a session's state change without its CSRF token
	}
	if pathParam.MatchString(op.Path) {
		set[http.StatusNotFound] = true
	}
	if body {
		set[http.StatusRequestEntityTooLarge] = true
	}
	var out []int
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

var errorContent = map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}

// errorResponse refers to the shared error answer of a status (Not Found
// is #/components/responses/NotFoundError: the suffix keeps the names
// apart from the schemas', x402's PaymentRequired among them, which code
// generators turn into types of one namespace).
func (r *reflector) errorResponse(status int) map[string]any {
	name := pascal(http.StatusText(status)) + "Error"
	if name == "Error" {
		name = "Status" + strconv.Itoa(status) + "Error"
	}
	if _, ok := r.responses[name]; !ok {
		desc := http.StatusText(status)
		if codes, ok := errorCodes[status]; ok {
			desc += ": " + codes
		}
		r.responses[name] = map[string]any{"description": desc, "content": errorContent}
	}
	return map[string]any{"$ref": "#/components/responses/" + name}
}

// parameter is the Parameter Object of p.
func (p Param) parameter(in string, required bool, schema map[string]any) map[string]any {
	out := map[string]any{"name": p.Name, "in": in, "required": required, "schema": schema}
	if p.Description != "" {
		out["description"] = p.Description
	}
	return out
}

// schema is the JSON schema of p's values.
func (p Param) schema() map[string]any {
	typ := p.Type
	if typ == "" {
		typ = "string"
	}
	s := map[string]any{"type": typ}
	if typ == "integer" {
		s["format"] = "int64"
	}
	if p.Min != nil {
		s["minimum"] = *p.Min
	}
	if p.Max != nil {
		s["maximum"] = *p.Max
	}
	if p.MinLength > 0 {
		s["minLength"] = p.MinLength
	}
	if p.MaxLength > 0 {
		s["maxLength"] = p.MaxLength
	}
	if p.Pattern != "" {
		s["pattern"] = p.Pattern
	}
	if len(p.Enum) > 0 {
		s["enum"] = p.Enum
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	return s
}

// direction says whether a schema describes what clients send or what
// they receive. It matters for pointer fields without omitempty: in an
// answer they are always there and may be null; in a request the pointer
// only tells a missing field from a zero one.
type direction int

const (
	response direction = iota
	request
)

// reflector turns Go types into JSON schemas, collecting named structs as
// components.
type reflector struct {
	responses map[string]any          // shared error answers by name
	schemas   map[string]any          // component name -> schema
	types     map[string]reflect.Type // component name -> its Go type
	dirs      map[reflect.Type]direction
}

func newReflector() *reflector {
	return &reflector{responses: map[string]any{}, schemas: map[string]any{"Error": errorSchema},
		types: map[string]reflect.Type{"Error": nil}, dirs: map[reflect.Type]direction{}}
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// schema returns the JSON schema of t's JSON encoding (a pointer's schema
// is its element's: callers decide where null is possible).
func (r *reflector) schema(t reflect.Type, dir direction) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		return map[string]any{} // free-form: any JSON value
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Implements(jsonMarshalerType):
		return map[string]any{} // its own encoding: anything
	case t.Implements(textMarshalerType):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.Name() == "" {
			return r.structSchema(t, dir)
		}
		return map[string]any{"$ref": "#/components/schemas/" + r.component(t, dir)}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": r.element(t.Elem(), dir)}
	case reflect.Array:
		return map[string]any{"type": "array", "items": r.element(t.Elem(), dir), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": r.element(t.Elem(), dir)}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return unsigned(t, map[string]any{"type": "integer", "format": "int32"})
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return unsigned(t, map[string]any{"type": "integer", "format": "int64"})
	case reflect.Float32:
		return map[string]any{"type": "number", "format": "float"}
	case reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	}
	return map[string]any{} // interfaces: any JSON value
}

func unsigned(t reflect.Type, s map[string]any) map[string]any {
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		s["minimum"] = 0
	}
	return s
}

// element is the schema of a slice's, array's or map's element: null where
// it is a nil pointer.
func (r *reflector) element(t reflect.Type, dir direction) map[string]any {
	s := r.schema(t, dir)
	if t.Kind() == reflect.Pointer {
		return orNull(s)
	}
	return s
}

// component registers the named struct t and returns its component name.
func (r *reflector) component(t reflect.Type, dir direction) string {
	return r.named(SchemaName(t), t, dir)
}

// named registers the struct t as the component name and returns name.
func (r *reflector) named(name string, t reflect.Type, dir direction) string {
	if have, ok := r.types[name]; ok {
		if have != t {
			panic(fmt.Sprintf("openapi: %v and %v would both be the schema %q", have, t, name))
		}
		if r.dirs[t] != dir && barePointer(t, map[reflect.Type]bool{}) {
			panic(fmt.Sprintf("openapi: %v is both sent and received and has a pointer field without omitempty: "+
				"add omitempty or use one type for each direction", t))
		}
		return name
	}
	r.types[name], r.dirs[t] = t, dir
	r.schemas[name] = map[string]any{} // placeholder for recursion
	r.schemas[name] = r.structSchema(t, dir)
	return name
}

// barePointer reports whether t holds, at any depth, a struct field that
// is a pointer without omitempty.
func barePointer(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t == timeType {
		return false
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() == reflect.Pointer && !f.Anonymous && !omits(opts) {
			return true
		}
		if barePointer(f.Type, seen) {
			return true
		}
	}
	return false
}

func omits(opts string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == "omitempty" || o == "omitzero" {
			return true
		}
	}
	return false
}

// SchemaName is the component name of a named type: its package's name
// and its own, so that types of the same name in different packages do
// not meet (game.Challenge is GameChallenge, auth.Challenge is
// AuthChallenge). A name that already begins with its package's (pot.Pot,
// flags.Flag) is not repeated, and the HTTP layer's own request and
// response bodies (packages handlers and handlers/api) keep their bare
// names. Packages
// renamed since the document was published keep their published prefix
// (schemaPrefixes): clients generated from it name their types so.
func SchemaName(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 { // a generic type's arguments
		args := strings.Split(name[i+1:len(name)-1], ",")
		name = name[:i]
		for _, a := range args {
			name += pascal(a[strings.LastIndexAny(a, "./")+1:])
		}
	}
	pkg := pascal(path.Base(t.PkgPath()))
	if published, ok := schemaPrefixes[pkg]; ok {
		pkg = published
	}
	if pkg == "Handlers" || pkg == "Api" || pkg == "Main" || strings.HasPrefix(name, pkg) || strings.HasPrefix(name, strings.TrimSuffix(pkg, "s")) {
		return name
	}
	return pkg + name
}

// schemaPrefixes are the published schema prefixes of renamed packages.
var schemaPrefixes = map[string]string{"Settlement": "Pot", "X402": "Payments"}

// structSchema is the object schema of a struct's JSON encoding.
func (r *reflector) structSchema(t reflect.Type, dir direction) map[string]any {
	props := map[string]any{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct { // promoted fields, as encoding/json does
				embedded := r.structSchema(ft, dir)
				for k, v := range embedded["properties"].(map[string]any) {
					props[k] = v
				}
				if req, ok := embedded["required"].([]string); ok {
					required = append(required, req...)
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		ps := r.schema(f.Type, dir)
		if asString(opts) && isScalar(ft) {
			ps = map[string]any{"type": "string"}
		}
		if named := f.Tag.Get("schema"); named != "" {
			if _, ok := r.schemas[named]; !ok {
				panic(fmt.Sprintf("openapi: %v.%s refers to the schema %q, which is not in OpenAPI.Schemas", t, f.Name, named))
			}
			ps = map[string]any{"$ref": "#/components/schemas/" + named}
		}
		present := !omits(opts)
		if (f.Type.Kind() == reflect.Pointer && present && dir == response) || f.Tag.Get("nullable") == "true" {
			ps = orNull(ps)
		}
		ps = withRules(ps, f.Tag)
		props[name] = ps
		if present {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = slices.Compact(required)
	}
	return s
}

func asString(opts string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == "string" {
			return true
		}
	}
	return false
}

func isScalar(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k := t.Kind()
	return k == reflect.Bool || (k >= reflect.Int && k <= reflect.Float64) || k == reflect.String
}

// orNull allows null besides s.
func orNull(s map[string]any) map[string]any {
	if _, ref := s["$ref"]; ref {
		return map[string]any{"oneOf": []any{s, map[string]any{"type": "null"}}}
	}
	typ, ok := s["type"].(string)
	if !ok {
		return s // already any JSON value
	}
	c := copyMap(s)
	c["type"] = []string{typ, "null"}
	if enum, ok := c["enum"].([]any); ok {
		c["enum"] = append(append([]any{}, enum...), nil)
	}
	return c
}

// ruleTags are the struct tags that add schema rules to a field: doc (the
// description), and the JSON Schema keywords of the same names (type
// narrows free-form JSON, e.g. type:"object" on a json.RawMessage).
// nullable:"true" allows null in a request field too (a response's
// pointer field without omitempty allows it anyway).
var ruleTags = []string{"type", "const", "minimum", "maximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "pattern", "enum", "format"}

// withRules adds the rules of a field's tags to its schema.
func withRules(s map[string]any, tag reflect.StructTag) map[string]any {
	rules := map[string]any{}
	for _, k := range ruleTags {
		v, ok := tag.Lookup(k)
		if !ok {
			continue
		}
		switch k {
		case "type", "const", "pattern", "format":
			rules[k] = v
		case "enum":
			var values []any
			for _, e := range strings.Split(v, ",") {
				values = append(values, e)
			}
			rules[k] = values
		default:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				panic(fmt.Sprintf("openapi: tag %s:%q is not an integer", k, v))
			}
			rules[k] = n
		}
	}
	doc := tag.Get("doc")
	if len(rules) == 0 && doc == "" {
		return s
	}
	if one, ok := s["oneOf"].([]any); ok && len(rules) > 0 { // a nullable $ref: the rules belong to the referenced value
		s = copyMap(s)
		s["oneOf"] = []any{withRules(one[0].(map[string]any), tag), one[1]}
		rules = nil
	}
	c := copyMap(s)
	for k, v := range rules {
		if k == "enum" {
			if types, ok := c["type"].([]string); ok && len(types) == 2 && types[1] == "null" {
				v = append(v.([]any), nil)
			}
		}
		c[k] = v
	}
	if doc != "" {
		c["description"] = doc
	}
	if c["type"] == "object" && c["properties"] == nil && c["additionalProperties"] == nil && c["$ref"] == nil {
		// Free-form: any members. Said outright, since generators read a
		// bare object as one that has none (TypeScript's
		// Record<string, never>).
		c["additionalProperties"] = map[string]any{}
	}
	return c
}

func copyMap(s map[string]any) map[string]any {
	c := make(map[string]any, len(s)+1)
	for k, v := range s {
		c[k] = v
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
