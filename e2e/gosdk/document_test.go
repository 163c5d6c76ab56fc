package wager_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"reflect"
	"testing"
)

// TestCommittedDocumentIsServed checks that openapi.json, which the client
// in package api is generated from (make generate), is the document the
// server serves: a route added, removed or changed without regenerating
// fails here.
func TestCommittedDocumentIsServed(t *testing.T) {
	s := startServer(t, nil)
	resp, err := http.Get(s.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	committed, err := os.ReadFile("../../sdk/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(served, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(committed, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("sdk/openapi.json differs from the served GET /openapi.json: run make generate and commit the result")
	}
}
