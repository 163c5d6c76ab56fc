package wager_test

import (
	"slices"
	"testing"

	wager "wager.example.com/sdk"
	"wager/domain"
)

// The SDK imports nothing of the server, so it keeps its own copy of the
// live protocol's names: every event and notice the server declares has
// a payload type there, and the SDK knows no name the server does not.
func TestNamesAreTheServers(t *testing.T) {
	server := slices.Concat(domain.GameEvents, domain.TournamentEvents, []domain.EventName{domain.EventSpectators})
	sameNames(t, "event names", wager.EventNames(), server)
	sameNames(t, "notice kinds", wager.NoticeKinds(), domain.Notices)
}

func sameNames[S ~string](t *testing.T, what string, sdk []string, server []S) {
	t.Helper()
	want := make([]string, len(server))
	for i, n := range server {
		want[i] = string(n)
	}
	slices.Sort(want)
	if !slices.Equal(sdk, want) {
		t.Errorf("%s: the SDK's only: %v; the server's only: %v",
			what, slices.DeleteFunc(slices.Clone(sdk), func(n string) bool { return slices.Contains(want, n) }),
			slices.DeleteFunc(slices.Clone(want), func(n string) bool { return slices.Contains(sdk, n) }))
	}
}
