package web

import (
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
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

// Param documents a query parameter.
type Param struct {
	Name, Description string
	Required          bool
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
	Errors      []int // documented error statuses besides the common ones
}

// OpenAPI collects operations and renders an OpenAPI 3.1 document.
type OpenAPI struct {
	Title, Version, Description string

	ops map[string]map[string]Op // path -> method -> op
}

// schemaSet collects the named schemas one document refers to.
type schemaSet map[string]any

// NewOpenAPI returns an empty document.
func NewOpenAPI(title, version, description string) *OpenAPI {
	return &OpenAPI{Title: title, Version: version, Description: description,
		ops: map[string]map[string]Op{}}
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

// Has reports whether the operation at an Echo route pattern is documented.
func (o *OpenAPI) Has(method, echoPath string) bool {
	_, ok := o.ops[OpenAPIPath(echoPath)][strings.ToLower(method)]
	return ok
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

// Document renders the OpenAPI 3.1 document as a JSON-ready value.
func (o *OpenAPI) Document() map[string]any {
	schemas := schemaSet{"Error": errorSchema}
	paths := map[string]any{}
	for p, byMethod := range o.ops {
		item := map[string]any{}
		for m, op := range byMethod {
			item[m] = schemas.operation(p, op)
		}
		paths[p] = item
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": o.Title, "version": o.Version, "description": o.Description},
		"paths":   paths,
		"components": map[string]any{
			"schemas": map[string]any(schemas),
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "Token from POST /auth/login-wallet; send X-App-Id with it."},
			},
		},
	}
}

var errorSchema = map[string]any{
	"type":     "object",
	"required": []string{"code", "message"},
	"properties": map[string]any{
		"code":      map[string]any{"type": "string", "description": "UPPER_SNAKE error code"},
		"message":   map[string]any{"type": "string"},
		"fields":    map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"requestId": map[string]any{"type": "string"},
	},
}

func (o schemaSet) operation(path string, op Op) map[string]any {
	out := map[string]any{"summary": op.Summary, "tags": []string{op.Tag}}
	if op.Description != "" {
		out["description"] = op.Description
	}
	var params []any
	for _, m := range echoParam.FindAllStringSubmatch(strings.NewReplacer("{", ":", "}", "").Replace(path), -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range op.Query {
		params = append(params, map[string]any{"name": q.Name, "in": "query", "required": q.Required,
			"description": q.Description, "schema": map[string]any{"type": "string"}})
	}
	if params != nil {
		out["parameters"] = params
	}
	switch op.Auth {
	case AuthRequired, AuthAdmin:
		out["security"] = []any{map[string]any{"bearer": []string{}}}
	case AuthOptional:
		out["security"] = []any{map[string]any{"bearer": []string{}}, map[string]any{}}
	}
	if op.Request != nil {
		out["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": o.schema(reflect.TypeOf(op.Request))}}}
	}
	status := op.Status
	if status == 0 {
		status = http.StatusOK
	}
	responses := map[string]any{}
	ok := map[string]any{"description": http.StatusText(status)}
	if op.Response != nil {
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": o.schema(reflect.TypeOf(op.Response))}}
	}
	responses[strconv.Itoa(status)] = ok
	errs := append([]int{}, op.Errors...)
	if op.Request != nil {
		errs = append(errs, http.StatusBadRequest)
	}
	switch op.Auth {
	case AuthRequired:
		errs = append(errs, http.StatusUnauthorized)
	case AuthAdmin:
		errs = append(errs, http.StatusUnauthorized, http.StatusForbidden)
	}
	for _, s := range errs {
		responses[strconv.Itoa(s)] = errorResponse(s)
	}
	out["responses"] = responses
	return out
}

func errorResponse(status int) map[string]any {
	return map[string]any{"description": http.StatusText(status), "content": map[string]any{
		"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
}

var timeType = reflect.TypeOf(time.Time{})

// schema returns the JSON schema of t, registering named structs as
// components.
func (o schemaSet) schema(t reflect.Type) map[string]any {
	nullable := false
	for t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), true
	}
	var s map[string]any
	switch {
	case t == timeType:
		s = map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Struct && t.Name() != "":
		if _, seen := o[t.Name()]; !seen {
			o[t.Name()] = map[string]any{} // placeholder for recursion
			o[t.Name()] = o.structSchema(t)
		}
		s = map[string]any{"$ref": "#/components/schemas/" + t.Name()}
		if nullable {
			return map[string]any{"oneOf": []any{s, map[string]any{"type": "null"}}}
		}
		return s
	case t.Kind() == reflect.Struct:
		s = o.structSchema(t)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		s = map[string]any{"type": "array", "items": o.schema(t.Elem())}
	case t.Kind() == reflect.Map:
		s = map[string]any{"type": "object", "additionalProperties": o.schema(t.Elem())}
	case t.Kind() == reflect.String:
		s = map[string]any{"type": "string"}
	case t.Kind() == reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		s = map[string]any{"type": "integer"}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		s = map[string]any{"type": "number"}
	default:
		s = map[string]any{}
	}
	if nullable {
		if typ, ok := s["type"].(string); ok {
			s["type"] = []string{typ, "null"}
		}
	}
	return s
}

func (o schemaSet) structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			embedded := o.structSchema(f.Type)
			for k, v := range embedded["properties"].(map[string]any) {
				props[k] = v
			}
			if r, ok := embedded["required"].([]string); ok {
				required = append(required, r...)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		ps := o.schema(f.Type)
		if doc := f.Tag.Get("doc"); doc != "" {
			ps = withDescription(ps, doc)
		}
		props[name] = ps
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && f.Type.Kind() != reflect.Pointer {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	return s
}

func withDescription(s map[string]any, doc string) map[string]any {
	if _, ref := s["$ref"]; ref {
		return map[string]any{"allOf": []any{s}, "description": doc}
	}
	c := make(map[string]any, len(s)+1)
	for k, v := range s {
		c[k] = v
	}
	c["description"] = doc
	return c
}

// Describe returns the schema of a body type with a top-level component
// reference resolved, for showing to people.
func (o *OpenAPI) Describe(v any) map[string]any {
	if v == nil {
		return nil
	}
	set := schemaSet{}
	s := set.schema(reflect.TypeOf(v))
	if ref, ok := s["$ref"].(string); ok {
		if resolved, ok := set[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any); ok {
			return resolved
		}
	}
	return s
}
