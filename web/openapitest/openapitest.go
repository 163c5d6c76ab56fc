// Package openapitest checks an OpenAPI document built by web.OpenAPI
// against the OpenAPI 3.1 specification and the API's own rules for it
// (API.md "The OpenAPI document"). Tests of any package call Check.
package openapitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"wager/web"
)

// Check builds the document of o and fails t for every way it breaks the
// specification or the rules. It returns the document as JSON.
func Check(t testing.TB, o *web.OpenAPI) []byte {
	t.Helper()
	var doc map[string]any
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("building the document: %v", p)
			}
		}()
		doc = o.Document()
	}()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("encoding the document: %v", err)
	}
	for _, err := range Validate(raw) {
		t.Errorf("OpenAPI validation: %v", err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	for _, ref := range Unresolved(tree) {
		t.Errorf("$ref %s does not resolve", ref)
	}
	for _, err := range Rules(o, tree) {
		t.Error(err)
	}
	return raw
}

// Validate loads the document with a maintained OpenAPI library, which
// resolves every reference, and validates it against the specification
// of its version (3.1: JSON Schema 2020-12 schemas).
func Validate(raw []byte) []error {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	d, err := loader.LoadFromData(raw)
	if err != nil {
		return []error{fmt.Errorf("loading: %w", err)}
	}
	if !d.IsOpenAPI31OrLater() {
		return []error{fmt.Errorf("openapi is %q, want 3.1", d.OpenAPI)}
	}
	ctx := context.Background()
	if err := d.Validate(ctx, openapi3.EnableSchemaPatternValidation(), openapi3.EnableSchemaDefaultsValidation(),
		openapi3.EnableExamplesValidation()); err != nil {
		var errs []error
		if me, ok := err.(openapi3.MultiError); ok {
			for _, e := range me {
				errs = append(errs, e)
			}
			return errs
		}
		return []error{err}
	}
	return nil
}

// Unresolved returns the $refs of a decoded document that do not point
// at a value inside it.
func Unresolved(doc any) []string {
	var bad []string
	walk(doc, func(m map[string]any) {
		ref, ok := m["$ref"].(string)
		if !ok {
			return
		}
		if _, found := Resolve(doc, ref); !found {
			bad = append(bad, ref)
		}
	})
	return bad
}

// Resolve follows a local reference (#/components/schemas/Name).
func Resolve(doc any, ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// walk calls f for every object of a decoded JSON value.
func walk(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(v)
		for _, e := range v {
			walk(e, f)
		}
	case []any:
		for _, e := range v {
			walk(e, f)
		}
	}
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// Rules checks the API's rules for the document (decoded as doc) against
// the Go types of o's operations: operationIds, the statuses every
// operation can answer, free-form JSON as free-form, and lists as arrays.
func Rules(o *web.OpenAPI, doc any) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	paths, _ := doc.(map[string]any)["paths"].(map[string]any)
	tags, _ := doc.(map[string]any)["tags"].([]any)
	for _, tag := range tags {
		if d, _ := tag.(map[string]any)["description"].(string); d == "" {
			fail("tag %v has no description", tag.(map[string]any)["name"])
		}
	}
	errs = append(errs, stringIDs(doc)...)
	ids := map[string]bool{}
	seen := map[reflect.Type]bool{}
	for _, op := range o.Operations() {
		where := op.Method + " " + op.Path
		item, _ := paths[op.Path].(map[string]any)
		out, _ := item[strings.ToLower(op.Method)].(map[string]any)
		if out == nil {
			fail("%s is not in the document", where)
			continue
		}
		id, _ := out["operationId"].(string)
		if id == "" || ids[id] {
			fail("%s: operationId %q is missing or not unique", where, id)
		}
		ids[id] = true
		responses, _ := out["responses"].(map[string]any)
		want := func(status int, why string) {
			if _, ok := responses[strconv.Itoa(status)]; !ok {
				fail("%s: no %d answer (%s)", where, status, why)
			}
		}
		if strings.Contains(op.Path, "{") {
			want(http.StatusNotFound, "the path names a resource")
		}
		if op.Request != nil || op.Upload != nil {
			want(http.StatusBadRequest, "the body is checked")
			want(http.StatusRequestEntityTooLarge, "the body is limited")
		}
		if len(op.Query) > 0 {
			want(http.StatusBadRequest, "the query is checked")
		}
		if op.Auth == web.AuthRequired || op.Auth == web.AuthAdmin {
			want(http.StatusUnauthorized, "credentials are checked")
		}
		for status, r := range responses {
			if status == strconv.Itoa(http.StatusNoContent) {
				if _, body := r.(map[string]any)["content"]; body {
					fail("%s: 204 with a body", where)
				}
			}
		}
		if op.Upload != nil {
			body, _ := out["requestBody"].(map[string]any)
			content, _ := body["content"].(map[string]any)
			if _, ok := content["multipart/form-data"]; !ok {
				fail("%s: the upload's multipart body is not documented", where)
			}
		}
		for _, p := range op.Query {
			if p.Type == "" && (p.Min != nil || p.Max != nil) {
				fail("%s: query %s has integer bounds but is not an integer", where, p.Name)
			}
			if p.Name == "before" && p.Type != "" {
				fail("%s: ?before= is an id, a string like every id, not %s", where, p.Type)
			}
			if (p.Name == "limit" || p.Name == "offset") && p.Type != "integer" {
				fail("%s: ?%s= is a number, documented as %q", where, p.Name, p.Type)
			}
		}
		bodies := []any{op.Request, op.Response}
		for _, b := range op.Responses {
			bodies = append(bodies, b)
		}
		for _, b := range bodies {
			if one, ok := b.(web.OneOf); ok {
				for _, t := range one.Types {
					errs = append(errs, checkType(doc, reflect.TypeOf(t), seen)...)
				}
			} else if b != nil {
				errs = append(errs, checkType(doc, reflect.TypeOf(b), seen)...)
			}
		}
	}
	return errs
}

// stringIDs checks that every id in the document is a string (API.md
// "Conventions"): properties named id or ending in Id, their array items,
// and path parameters.
func stringIDs(doc any) []error {
	var errs []error
	var isString func(s map[string]any) bool
	isString = func(s map[string]any) bool {
		if _, ref := s["$ref"]; ref {
			return false
		}
		switch t := s["type"].(type) {
		case string:
			return t == "string"
		case []any:
			return len(t) > 0 && t[0] == "string"
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			if alts, ok := s[k].([]any); ok && len(alts) > 0 {
				return isString(alts[0].(map[string]any))
			}
		}
		return false
	}
	walk(doc, func(m map[string]any) {
		if props, ok := m["properties"].(map[string]any); ok {
			for name, p := range props {
				if name != "id" && !strings.HasSuffix(name, "Id") {
					continue
				}
				s, _ := p.(map[string]any)
				if s["type"] == "array" {
					s, _ = s["items"].(map[string]any)
				}
				if s == nil || !isString(s) {
					errs = append(errs, fmt.Errorf("property %s is an id but its schema is %v, not a string", name, p))
				}
			}
		}
		if m["in"] == "path" {
			if s, _ := m["schema"].(map[string]any); s == nil || s["type"] != "string" || s["format"] != nil {
				errs = append(errs, fmt.Errorf("path parameter %v is %v: a plain string takes exactly what a response gave", m["name"], m["schema"]))
			}
		}
	})
	return errs
}

// checkType checks the component schemas of t and the types it holds:
// json.RawMessage is free-form JSON, never an array of integers, and every
// other slice is an array that is never null.
func checkType(doc any, t reflect.Type, seen map[reflect.Type]bool) []error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		if t == rawMessage {
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.Name() == "" {
		return nil
	}
	seen[t] = true
	name := web.SchemaName(t)
	schema, ok := Resolve(doc, "#/components/schemas/"+name)
	if !ok {
		if t.PkgPath() == "time" {
			return nil
		}
		return []error{fmt.Errorf("%v has no schema %s", t, name)}
	}
	props, _ := schema.(map[string]any)["properties"].(map[string]any)
	var errs []error
	var fields func(t reflect.Type)
	fields = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "-" {
				continue
			}
			if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
				fields(f.Type)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if tag == "" {
				tag = f.Name
			}
			p, _ := props[tag].(map[string]any)
			where := fmt.Sprintf("%s.%s (schema %s, property %s)", t, f.Name, name, tag)
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case p == nil:
				errs = append(errs, fmt.Errorf("%s: not documented", where))
			case ft == rawMessage:
				if typ, has := p["type"]; has && typ != "object" {
					errs = append(errs, fmt.Errorf("%s: json.RawMessage is free-form JSON, documented as type %v", where, typ))
				}
				if _, has := p["items"]; has {
					errs = append(errs, fmt.Errorf("%s: json.RawMessage documented as an array", where))
				}
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 && f.Type.Kind() != reflect.Pointer:
				if p["type"] != "array" {
					errs = append(errs, fmt.Errorf("%s: a list documented as %v, want an array that is never null (opts %q)", where, p["type"], opts))
				}
			}
			errs = append(errs, checkType(doc, f.Type, seen)...)
		}
	}
	fields(t)
	return errs
}
