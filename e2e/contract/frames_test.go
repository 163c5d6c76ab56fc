package contract_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryFrameMatchesTheAsyncAPIDocument checks the served AsyncAPI
// document with @asyncapi/parser and validates every WebSocket frame the
// scene's three sockets received against the payload schema of its
// message (found by type, event or notice), with ajv.
func TestEveryFrameMatchesTheAsyncAPIDocument(t *testing.T) {
	needPackages(t, "ajv", "@asyncapi/parser")
	sc := play(t)
	doc := fetch(t, sc.s, "/asyncapi.json")
	var lines []string
	for _, w := range sc.sockets {
		for _, f := range w.all() {
			lines = append(lines, string(f))
		}
	}
	frames := filepath.Join(t.TempDir(), "frames.jsonl")
	if err := os.WriteFile(frames, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := node(t, nil, "e2e/contract/frames.mjs", doc, frames)
	var report struct {
		ParserErrors []string       `json:"parserErrors"`
		Frames       int            `json:"frames"`
		Valid        int            `json:"valid"`
		Messages     map[string]int `json:"messages"`
		Failures     []struct {
			Frame   json.RawMessage `json:"frame"`
			Message string          `json:"message"`
			Errors  any             `json:"errors"`
		} `json:"failures"`
	}
	if jerr := json.Unmarshal([]byte(out), &report); jerr != nil {
		t.Fatalf("frames.mjs: %v (%v)\n%s", jerr, err, out)
	}
	for _, e := range report.ParserErrors {
		t.Errorf("@asyncapi/parser: %s", e)
	}
	for _, f := range report.Failures {
		t.Errorf("frame %s: %s %v", f.Frame, f.Message, f.Errors)
	}
	t.Logf("%d of %d frames valid; messages seen: %v", report.Valid, report.Frames, report.Messages)
	for _, want := range []string{"frame.joined", "frame.resumed", "frame.game.spectators", "frame.error", "frame.left", "frame.pong",
		"event.game.rps.round.reveal", "event.game.completed", "event.game.bet", "event.game.market",
		"event.game.donation", "event.game.chat.message", "notice.game.matched", "notice.notification", "notice.balance",
		"notice.challenge.received", "notice.rematch.requested"} {
		if report.Messages[want] == 0 {
			t.Errorf("no frame of %s was received: the scene should exercise it", want)
		}
	}
}
