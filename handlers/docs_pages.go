package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"wager/views"
	"wager/web"
)

// docsReference is the API reference the docs page shows, built once
// from the two documents the server serves.
type docsReference struct {
	once sync.Once
	ref  views.Reference
}

func (a *App) docsPage(c echo.Context) error {
	a.reference.once.Do(func() {
		a.reference.ref = buildReference(refDecoded(a.Docs.Document()), refDecoded(a.Protocol.Document()))
	})
	return web.Render(c, http.StatusOK, views.Docs(a.chrome.pageFor(c, "API reference"), a.reference.ref))
}

// decoded is a document as JSON decodes it: maps, lists, strings, numbers.
func refDecoded(doc map[string]any) map[string]any {
	b, _ := json.Marshal(doc)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// buildReference renders the OpenAPI and AsyncAPI documents into what the
// docs page shows: operations by tag, the live socket's messages, and
// every named schema once, which the others link to.
func buildReference(openapi, asyncapi map[string]any) views.Reference {
	var ref views.Reference
	tagDesc := map[string]string{}
	for _, t := range refList(openapi["tags"]) {
		tagDesc[refStr(refObj(t)["name"])] = refStr(refObj(t)["description"])
	}
	byTag := map[string][]views.RefOperation{}
	for path, item := range refObj(openapi["paths"]) {
		for method, raw := range refObj(item) {
			op := refObj(raw)
			o := views.RefOperation{Method: strings.ToUpper(method), Path: path, ID: refStr(op["operationId"]),
				Summary: refStr(op["summary"]), Description: refStr(op["description"]), Auth: refAuthOf(op)}
			for _, p := range refList(op["parameters"]) {
				p = refDeref(openapi, p)
				o.Params = append(o.Params, views.RefParam{Name: refStr(refObj(p)["name"]), In: refStr(refObj(p)["in"]),
					Required: refObj(p)["required"] == true, Description: refStr(refObj(p)["description"]), Type: refTypeOf(refObj(refObj(p)["schema"]))})
			}
			if body := refObj(op["requestBody"]); body != nil {
				for media, m := range refObj(body["content"]) {
					o.Body = &views.RefBody{Media: media, Schema: refSchemaView(refObj(refObj(m)["schema"]))}
				}
			}
			statuses := refKeys(refObj(op["responses"]))
			for _, status := range statuses {
				r := refDeref(openapi, refObj(op["responses"])[status])
				out := views.RefResponse{Status: status, Description: refStr(refObj(r)["description"])}
				for media, m := range refObj(refObj(r)["content"]) {
					s := refSchemaView(refObj(refObj(m)["schema"]))
					out.Media, out.Schema = media, &s
				}
				o.Responses = append(o.Responses, out)
			}
			tag := "other"
			if tags := refList(op["tags"]); len(tags) > 0 {
				tag = refStr(tags[0])
			}
			byTag[tag] = append(byTag[tag], o)
		}
	}
	for _, tag := range refKeys(byTag) {
		ops := byTag[tag]
		sort.Slice(ops, func(i, j int) bool {
			if ops[i].Path != ops[j].Path {
				return ops[i].Path < ops[j].Path
			}
			return refMethodOrder(ops[i].Method) < refMethodOrder(ops[j].Method)
		})
		ref.Groups = append(ref.Groups, views.RefGroup{Tag: tag, Description: tagDesc[tag], Operations: ops})
	}

	ref.Live = views.RefLive{Title: refStr(refObj(asyncapi["info"])["title"]), Description: refStr(refObj(asyncapi["info"])["description"])}
	messages := refObj(refObj(asyncapi["components"])["messages"])
	for _, id := range refKeys(messages) {
		m := refObj(messages[id])
		kind, _, _ := strings.Cut(id, ".")
		ref.Live.Messages = append(ref.Live.Messages, views.RefMessage{ID: id, Kind: kind, Name: refStr(m["name"]),
			Summary: refStr(m["summary"]), Payload: refSchemaView(refObj(m["payload"]))})
	}

	schemas := map[string]any{}
	for name, s := range refObj(refObj(asyncapi["components"])["schemas"]) {
		schemas[name] = s
	}
	for name, s := range refObj(refObj(openapi["components"])["schemas"]) {
		schemas[name] = s
	}
	for _, name := range refKeys(schemas) {
		s := refObj(schemas[name])
		ref.Schemas = append(ref.Schemas, views.RefSchema{Name: name, Description: refStr(s["description"]), Schema: refSchemaView(s)})
	}
	return ref
}

// schemaView is a schema as the page shows it: its type, and for an
// object every property (nested objects indented, named schemas linked).
func refSchemaView(s map[string]any) views.RefSchemaView {
	v := views.RefSchemaView{Type: refTypeOf(s)}
	var rows func(s map[string]any, depth int)
	rows = func(s map[string]any, depth int) {
		if alts := refAlternatives(s); alts != nil {
			for _, a := range alts {
				rows(a, depth)
			}
			return
		}
		if s["type"] == "array" || refHasType(s, "array") {
			rows(refObj(s["items"]), depth)
			return
		}
		props := refObj(s["properties"])
		required := map[string]bool{}
		for _, r := range refList(s["required"]) {
			required[refStr(r)] = true
		}
		for _, name := range refKeys(props) {
			p := refObj(props[name])
			v.Rows = append(v.Rows, views.RefRow{Name: name, Depth: depth, Type: refTypeOf(p), Required: required[name],
				Rules: refRulesOf(p), Description: refStr(p["description"])})
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
func refAlternatives(s map[string]any) []map[string]any {
	for _, k := range []string{"oneOf", "anyOf"} {
		var out []map[string]any
		for _, a := range refList(s[k]) {
			if refObj(a)["$ref"] == nil && refObj(a)["type"] != "null" {
				out = append(out, refObj(a))
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
func refTypeOf(s map[string]any) views.RefType {
	if s == nil {
		return views.RefType{Text: "any"}
	}
	if ref := refStr(s["$ref"]); ref != "" {
		name := ref[strings.LastIndex(ref, "/")+1:]
		return views.RefType{Text: name, Link: "#schema-" + name}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts := refList(s[k]); len(alts) > 0 {
			var parts []views.RefType
			for _, a := range alts {
				parts = append(parts, refTypeOf(refObj(a)))
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
			names = append(names, refStr(n))
		}
	}
	if len(names) == 0 {
		return views.RefType{Text: "any"}
	}
	out := views.RefType{Text: names[0]}
	if names[0] == "array" {
		item := refTypeOf(refObj(s["items"]))
		out = views.RefType{Text: "array of", Parts: []views.RefType{item}}
	}
	if f := refStr(s["format"]); f != "" && names[0] != "array" {
		out.Text += " (" + f + ")"
	}
	if len(names) > 1 {
		out.Nullable = true
	}
	return out
}

func refHasType(s map[string]any, name string) bool {
	for _, n := range refList(s["type"]) {
		if n == name {
			return true
		}
	}
	return false
}

// rulesOf lists a schema's limits in words.
func refRulesOf(s map[string]any) string {
	var out []string
	if e := refList(s["enum"]); len(e) > 0 {
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

func refAuthOf(op map[string]any) string {
	sec, ok := op["security"].([]any)
	switch {
	case !ok || len(sec) == 0:
		return "public"
	case len(refObj(sec[len(sec)-1])) == 0:
		return "optional: a bearer token with X-App-Id, or the browser session"
	}
	return "a bearer token with X-App-Id, or the browser session"
}

func refMethodOrder(m string) int {
	return strings.Index("GET HEAD POST PUT PATCH DELETE", m)
}

// deref follows a local $ref of a document.
func refDeref(doc map[string]any, v any) any {
	ref := refStr(refObj(v)["$ref"])
	if !strings.HasPrefix(ref, "#/") {
		return v
	}
	cur := any(doc)
	for _, tok := range strings.Split(ref[2:], "/") {
		cur = refObj(cur)[tok]
	}
	return cur
}

// The documents are maps of JSON values built in Go: these read them.
func refObj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func refStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func refList(v any) []any {
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

func refKeys[V any](m map[string]V) []string {
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
