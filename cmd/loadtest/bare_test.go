package main

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
)

// TestMain lets the test binary serve the bare reference, as loadtest
// does when the reads scenario starts it as a process of its own.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == serveBareArg {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestTheBareReferenceIsAProcessOfItsOwn(t *testing.T) {
	b, err := startBare()
	if err != nil {
		t.Fatal(err)
	}
	pid := b.cmd.Process.Pid
	if pid == os.Getpid() {
		t.Fatal("the bare reference runs in this process")
	}
	resp, err := http.Get(b.URL + "/games/live")
	if err != nil {
		t.Fatal(err)
	}
	var live []bareLiveGame
	err = json.NewDecoder(resp.Body).Decode(&live)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(live) != 100 {
		t.Fatalf("GET /games/live: %d, %d games, %v", resp.StatusCode, len(live), err)
	}

	if err := b.Close(); err != nil {
		t.Fatalf("stopping the reference: %v", err)
	}
	if b.cmd.ProcessState == nil || !b.cmd.ProcessState.Exited() {
		t.Fatalf("the reference's process did not end: %v", b.cmd.ProcessState)
	}
	if _, err := http.Get(b.URL + "/games/live"); err == nil {
		t.Error("the reference still answers after Close")
	}
}
