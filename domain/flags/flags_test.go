package flags_test

import (
	"encoding/json"
	"testing"

	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/flags"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// Before any change the list is empty, and a JSON client reads [] where
// the schema promises an array, not null.
func TestChangesAreAnEmptyListBeforeAnyChange(t *testing.T) {
	s := flags.New(dbtest.DB(t), domain.SystemClock)
	changes, err := s.Changes(t.Context(), 50)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(changes)
	if err != nil || string(b) != "[]" {
		t.Fatalf("no changes encode as %s (%v), want []", b, err)
	}
}
