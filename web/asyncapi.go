package web

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Message is one kind of WebSocket message: its payload's Go type, whose
// schema comes from reflection like the OpenAPI document's. A field tagged
// const:"value" (a frame's type) is that value only. Schema names the
// payload's schema where its type has no name of its own (a type built
// with reflect.StructOf).
type Message struct {
	Name, Summary string
	Payload       any
	Schema        string
}

// payload is the schema of a message's payload.
func (r *reflector) payload(m Message, dir direction) map[string]any {
	t := reflect.TypeOf(m.Payload)
	if m.Schema == "" {
		return r.schema(t, dir)
	}
	return map[string]any{"$ref": "#/components/schemas/" + r.named(m.Schema, t, dir)}
}

// AsyncAPI describes the live socket: what clients send, the frames the
// server sends, and the server's game events and personal notices by
// name with their data types. Document renders it as AsyncAPI 3.0.
type AsyncAPI struct {
	Title, Version, Description string
	Host, Protocol, Address     string // where the socket is: localhost:8080, ws or wss, /ws

	Send    []Message // what clients send
	Receive []Message // the frames the server sends besides events and notices

	// Event and Notice are the envelopes of events and notices: Event's
	// field tagged json:"event", and Notice's json:"notice", names the
	// kind, and the field json:"data" carries the data of Events or
	// Notices of that name.
	Event, Notice   any
	Events, Notices map[string]any
	// TournamentEvent is the envelope of a tournament room's events
	// (json:"event" names the kind), and TournamentEvents their data by
	// name.
	TournamentEvent  any
	TournamentEvents map[string]any

	// Schemas are named schemas that fields refer to with schema:"Name",
	// and Components Go types whose schemas they refer to.
	Schemas    map[string]any
	Components []any
}

// Document renders the AsyncAPI 3.0 document as a JSON-ready value. It
// panics when two Go types would share a schema name, like OpenAPI's.
func (a *AsyncAPI) Document() map[string]any {
	r := newReflector()
	for name, schema := range a.Schemas {
		r.schemas[name], r.types[name] = schema, nil
	}
	for _, c := range a.Components {
		r.schema(reflect.TypeOf(c), response)
	}
	messages := map[string]any{}
	channelMessages := map[string]any{}
	var sent, received []any
	add := func(id, name, title, summary string, payload map[string]any, fromClient bool) {
		m := map[string]any{"name": name, "title": title, "payload": payload, "contentType": "application/json"}
		if summary != "" {
			m["summary"] = summary
		}
		messages[id] = m
		channelMessages[id] = map[string]any{"$ref": "#/components/messages/" + id}
		ref := map[string]any{"$ref": "#/channels/live/messages/" + id}
		if fromClient {
			received = append(received, ref)
		} else {
			sent = append(sent, ref)
		}
	}
	for _, m := range a.Send {
		add(messageID("client", m.Name), m.Name, m.Name+" (client)", m.Summary, r.payload(m, request), true)
	}
	for _, m := range a.Receive {
		add(messageID("frame", m.Name), m.Name, m.Name, m.Summary, r.payload(m, response), false)
	}
	kinds := func(envelope any, kind string, data map[string]any, summary string) {
		for _, name := range sortedKeys(data) {
			s := r.structSchema(reflect.TypeOf(envelope), response)
			props := s["properties"].(map[string]any)
			props[kind] = map[string]any{"type": "string", "const": name}
			props["data"] = r.schema(reflect.TypeOf(data[name]), response)
			add(messageID(kind, name), name, name, fmt.Sprintf(summary, name), s, false)
		}
	}
	kinds(a.Event, "event", a.Events, "The game event %s: every socket in the game's room receives it, players and spectators alike, once and in seq order.")
	if a.TournamentEvent != nil {
		kinds(a.TournamentEvent, "event", a.TournamentEvents, "The tournament event %s: every socket in the tournament's room receives it, once and in seq order.")
	}
	kinds(a.Notice, "notice", a.Notices, "The personal notice %s.")
	delete(r.schemas, "Error") // the HTTP error body: frames have their own
	return map[string]any{
		"asyncapi":           "3.0.0",
		"info":               map[string]any{"title": a.Title, "version": a.Version, "description": a.Description},
		"defaultContentType": "application/json",
		"servers": map[string]any{"api": map[string]any{"host": a.Host, "protocol": a.Protocol, "pathname": a.Address,
			"description": "The live socket: authenticate with Authorization: Bearer (and X-App-Id), ?token=<jwt>, or the browser session."}},
		"channels": map[string]any{"live": map[string]any{"address": a.Address, "title": "The live socket",
			"description": "One socket per client carries every game room it joined and the user's personal notices. " +
				"Each frame is one JSON object whose type (and event or notice) names its message.",
			"messages": channelMessages,
			"bindings": map[string]any{"ws": map[string]any{"method": "GET", "query": map[string]any{"type": "object", "properties": map[string]any{
				"token":  map[string]any{"type": "string", "description": "the access token, for clients that cannot set headers"},
				"format": map[string]any{"type": "string", "enum": []any{"html"}, "description": "html: a browser page's socket (HTML fragments); absent: JSON frames"},
			}}}}}},
		"operations": map[string]any{
			"receiveClientMessages": map[string]any{"action": "receive", "channel": map[string]any{"$ref": "#/channels/live"},
				"summary": "What clients send", "messages": received},
			"sendFrames": map[string]any{"action": "send", "channel": map[string]any{"$ref": "#/channels/live"},
				"summary": "The frames the server sends: answers, game events and personal notices", "messages": sent},
		},
		"components": map[string]any{"messages": messages, "schemas": r.schemas},
	}
}

// messageID is a message's key: its kind and name with every character
// AsyncAPI does not allow in a key as a dot (game:rps:round:start is
// event.game.rps.round.start).
func messageID(kind, name string) string {
	return kind + "." + strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '.'
	}, name)
}

// MessageNames returns the names of the document's messages by kind
// (client, frame, event, notice), sorted, for listing.
func (a *AsyncAPI) MessageNames() map[string][]string {
	out := map[string][]string{}
	for _, m := range a.Send {
		out["client"] = append(out["client"], m.Name)
	}
	for _, m := range a.Receive {
		out["frame"] = append(out["frame"], m.Name)
	}
	out["event"], out["notice"] = append(sortedKeys(a.Events), sortedKeys(a.TournamentEvents)...), sortedKeys(a.Notices)
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}
