// Package reference renders the server's OpenAPI and AsyncAPI documents
// into the API reference that the docs page shows.
package reference

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"wager/views"
)

// decoded is a document as JSON decodes it: maps, lists, strings, numbers.
func decoded(doc map[string]any) map[string]any {
	b, _ := json.Marshal(doc)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// Build renders the OpenAPI and AsyncAPI documents, as web.OpenAPI and
// web.AsyncAPI build them, into what the docs page shows: operations by
// tag, the live socket's messages, and every named schema once, which the
// others link to. What a document lacks, the reference leaves out.
func Build(openapi, asyncapi map[string]any) views.Reference {
	openapi, asyncapi = decoded(openapi), decoded(asyncapi)
	var ref views.Reference
	tagDesc := map[string]string{}
	for _, t := range list(openapi["tags"]) {
		tagDesc[str(obj(t)["name"])] = str(obj(t)["description"])
	}
	byTag := map[string][]views.RefOperation{}
	for path, item := range obj(openapi["paths"]) {
		for method, raw := range obj(item) {
			op := obj(raw)
			o := views.RefOperation{Method: strings.ToUpper(method), Path: path, ID: str(op["operationId"]),
				Summary: str(op["summary"]), Description: str(op["description"]), Auth: authOf(op)}
			for _, p := range list(op["parameters"]) {
				p = deref(openapi, p)
				o.Params = append(o.Params, views.RefParam{Name: str(obj(p)["name"]), In: str(obj(p)["in"]),
					Required: obj(p)["required"] == true, Description: str(obj(p)["description"]), Type: typeOf(obj(obj(p)["schema"]))})
			}
			if body := obj(op["requestBody"]); body != nil {
				for media, m := range obj(body["content"]) {
					o.Body = &views.RefBody{Media: media, Schema: schemaView(obj(obj(m)["schema"]))}
				}
			}
			statuses := keys(obj(op["responses"]))
			for _, status := range statuses {
				r := deref(openapi, obj(op["responses"])[status])
				out := views.RefResponse{Status: status, Description: str(obj(r)["description"])}
				for media, m := range obj(obj(r)["content"]) {
					s := schemaView(obj(obj(m)["schema"]))
					out.Media, out.Schema = media, &s
				}
				o.Responses = append(o.Responses, out)
			}
			tag := "other"
			if tags := list(op["tags"]); len(tags) > 0 {
				tag = str(tags[0])
			}
			byTag[tag] = append(byTag[tag], o)
		}
	}
	for _, tag := range staffLast(keys(byTag)) {
		ops := byTag[tag]
		sort.Slice(ops, func(i, j int) bool {
			if ops[i].Path != ops[j].Path {
				return ops[i].Path < ops[j].Path
			}
			return methodOrder(ops[i].Method) < methodOrder(ops[j].Method)
		})
		ref.Groups = append(ref.Groups, views.RefGroup{Tag: tag, Description: tagDesc[tag], Operations: ops})
	}

	ref.Live = views.RefLive{Title: str(obj(asyncapi["info"])["title"]), Description: str(obj(asyncapi["info"])["description"])}
	messages := obj(obj(asyncapi["components"])["messages"])
	for _, id := range keys(messages) {
		m := obj(messages[id])
		kind, _, _ := strings.Cut(id, ".")
		ref.Live.Messages = append(ref.Live.Messages, views.RefMessage{ID: id, Kind: kind, Name: str(m["name"]),
			Summary: str(m["summary"]), Payload: schemaView(obj(m["payload"]))})
	}

	schemas := map[string]any{}
	for name, s := range obj(obj(asyncapi["components"])["schemas"]) {
		schemas[name] = s
	}
	for name, s := range obj(obj(openapi["components"])["schemas"]) {
		schemas[name] = s
	}
	for _, name := range keys(schemas) {
		s := obj(schemas[name])
		ref.Schemas = append(ref.Schemas, views.RefSchema{Name: name, Description: str(s["description"]), Schema: schemaView(s)})
	}
	return ref
}

// schemaView is a schema as the page shows it: its type, and for an
// object every property (nested objects indented, named schemas linked).
func schemaView(s map[string]any) views.RefSchemaView {
	v := views.RefSchemaView{Type: typeOf(s)}
	var rows func(s map[string]any, depth int)
	rows = func(s map[string]any, depth int) {
		if alts := alternatives(s); alts != nil {
			for _, a := range alts {
				rows(a, depth)
			}
			return
		}
		if s["type"] == "array" || hasType(s, "array") {
			rows(obj(s["items"]), depth)
			return
		}
		props := obj(s["properties"])
		required := map[string]bool{}
		for _, r := range list(s["required"]) {
			required[str(r)] = true
		}
		for _, name := range keys(props) {
			p := obj(props[name])
			v.Rows = append(v.Rows, views.RefRow{Name: name, Depth: depth, Type: typeOf(p), Required: required[name],
				Rules: rulesOf(p), Description: str(p["description"])})
			if depth < 4 && p["$ref"] == nil {
				rows(p, depth+1)
			}
		}
	}
	if s["$ref"] == nil {
		rows(s, 0)
	}
	return v
}

// alternatives are the inline schemas of a oneOf or anyOf, nil when s has
// none or they are only named ones (the type links to them).
func alternatives(s map[string]any) []map[string]any {
	for _, k := range []string{"oneOf", "anyOf"} {
		var out []map[string]any
		for _, a := range list(s[k]) {
			if obj(a)["$ref"] == nil && obj(a)["type"] != "null" {
				out = append(out, obj(a))
			}
		}
		if out != nil {
			return out
		}
	}
	return nil
}

// typeOf names a schema's type: named schemas as links, arrays by their
// items, nullable ones with "or null".
func typeOf(s map[string]any) views.RefType {
	if s == nil {
		return views.RefType{Text: "any"}
	}
	if ref := str(s["$ref"]); ref != "" {
		name := ref[strings.LastIndex(ref, "/")+1:]
		return views.RefType{Text: name, Link: "#schema-" + name}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts := list(s[k]); len(alts) > 0 {
			var parts []views.RefType
			for _, a := range alts {
				parts = append(parts, typeOf(obj(a)))
			}
			return views.RefType{Text: "one of", Parts: parts}
		}
	}
	if c, ok := s["const"]; ok {
		return views.RefType{Text: fmt.Sprintf("%q", fmt.Sprint(c))}
	}
	var names []string
	switch t := s["type"].(type) {
	case string:
		names = []string{t}
	case []any:
		for _, n := range t {
			names = append(names, str(n))
		}
	}
	if len(names) == 0 {
		return views.RefType{Text: "any"}
	}
	out := views.RefType{Text: names[0]}
	if names[0] == "array" {
		item := typeOf(obj(s["items"]))
		out = views.RefType{Text: "array of", Parts: []views.RefType{item}}
	}
	if f := str(s["format"]); f != "" && names[0] != "array" {
		out.Text += " (" + f + ")"
	}
	if len(names) > 1 {
		out.Nullable = true
	}
	return out
}

func hasType(s map[string]any, name string) bool {
	for _, n := range list(s["type"]) {
		if n == name {
			return true
		}
	}
	return false
}

// rulesOf lists a schema's limits in words.
func rulesOf(s map[string]any) string {
	var out []string
	if e := list(s["enum"]); len(e) > 0 {
		var vals []string
		for _, v := range e {
			if v == nil {
				continue
			}
			vals = append(vals, fmt.Sprint(v))
		}
		out = append(out, "one of "+strings.Join(vals, ", "))
	}
	for _, r := range []struct{ key, word string }{{"minimum", "at least"}, {"maximum", "at most"}, {"minLength", "length at least"},
		{"maxLength", "length at most"}, {"minItems", "items at least"}, {"maxItems", "items at most"}, {"multipleOf", "a multiple of"},
		{"pattern", "matches"}, {"default", "default"}} {
		if v, ok := s[r.key]; ok {
			out = append(out, r.word+" "+fmt.Sprint(v))
		}
	}
	return strings.Join(out, "; ")
}

func authOf(op map[string]any) string {
	sec, ok := op["security"].([]any)
	switch {
	case !ok || len(sec) == 0:
		return "public"
	case len(obj(sec[len(sec)-1])) == 0:
		return "optional: a bearer token with X-App-Id, or the browser session"
	}
	return "a bearer token with X-App-Id, or the browser session"
}

func methodOrder(m string) int {
	return strings.Index("GET HEAD POST PUT PATCH DELETE", m)
}

// deref follows a local $ref of a document.
func deref(doc map[string]any, v any) any {
	ref := str(obj(v)["$ref"])
	if !strings.HasPrefix(ref, "#/") {
		return v
	}
	cur := any(doc)
	for _, tok := range strings.Split(ref[2:], "/") {
		cur = obj(cur)[tok]
	}
	return cur
}

// The documents are maps of JSON values built in Go: these read them.
func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func list(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out
	}
	return nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, aerr := strconv.Atoi(out[i])
		b, berr := strconv.Atoi(out[j])
		if aerr == nil && berr == nil {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}

// staffTags are the groups of operations for staff and for development,
// which the reference lists after everyone's.
var staffTags = []string{"admin", "dev"}

// staffLast orders tags with the staff's last, each part in its order.
func staffLast(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, staff := range []bool{false, true} {
		for _, t := range tags {
			if slices.Contains(staffTags, t) == staff {
				out = append(out, t)
			}
		}
	}
	return out
}
