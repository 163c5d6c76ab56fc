package handlers_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// An admin's recurring arena: each occurrence appears an hour before it
// starts, as a normal arena with its schedule and its recurrence in words,
// among the upcoming ones; one whose time passed while nothing ran is
// skipped; a stopped schedule creates nothing more. Players cannot
// schedule, and bad fields are named.
func TestARecurringArenaAppearsOnSchedule(t *testing.T) {
	clk := newTestClock()
	clk.ns.Store(time.Date(2026, 12, 2, 10, 30, 0, 0, time.UTC).UnixNano())
	adminWallet := newWallet(t)
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()}, clk.now)
	admin, player := a.admin(t, adminWallet), a.newPlayer(t)
	body := `{"name": "Evening arena", "gameType": "rps", "entryFeeMinor": 0, "durationMinutes": 30, "every": "daily", "at": "18:00",
		"agentsAllowed": false}`
	a.do(t, request{method: http.MethodPost, path: "/admin/tournament-schedules", header: player.auth, body: body}).
		wantError(t, http.StatusForbidden, "ADMIN_ONLY")
	bad := a.do(t, request{method: http.MethodPost, path: "/admin/tournament-schedules", header: admin.auth,
		body: `{"name": "", "gameType": "rps", "entryFeeMinor": 5, "durationMinutes": 30, "every": "monthly", "at": "25:00"}`}).
		wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	for _, f := range []string{"name", "entryFeeMinor", "every", "at"} {
		if _, ok := bad["fields"].(map[string]any)[f]; !ok {
			t.Errorf("the refusal does not name %s: %v", f, bad["fields"])
		}
	}
	r := a.do(t, request{method: http.MethodPost, path: "/admin/tournament-schedules", header: admin.auth, body: body})
	if r.Code != http.StatusCreated {
		t.Fatalf("create a schedule: %d %s", r.Code, r.Body)
	}
	schedule := r.json(t)
	if schedule["nextAt"] != "2026-12-02T18:00:00Z" {
		t.Fatalf("the first start: %v", schedule["nextAt"])
	}
	upcoming := func() []map[string]any {
		t.Helper()
		if err := a.Tournaments.Work(context.Background()); err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, x := range a.do(t, request{path: "/tournaments?upcoming=true"}).list(t) {
			if m := x.(map[string]any); m["scheduleId"] == schedule["id"] {
				out = append(out, m)
			}
		}
		return out
	}
	if got := upcoming(); len(got) != 0 {
		t.Fatalf("7 h 30 before the start: %v", got)
	}
	clk.advance(6*time.Hour + 31*time.Minute) // 17:01: within the hour
	got := upcoming()
	if len(got) != 1 || got[0]["startsAt"] != "2026-12-02T18:00:00Z" || got[0]["recurrence"] != "every day at 18:00 UTC" ||
		got[0]["agentsAllowed"] != false || got[0]["status"] != "scheduled" {
		t.Fatalf("at 17:01: %v", got)
	}
	if again := upcoming(); len(again) != 1 {
		t.Fatalf("a second run of the worker made %d occurrences", len(again))
	}
	// Nothing runs for two days: the missed starts are skipped, the next is
	// created an hour ahead.
	clk.advance(48 * time.Hour)
	starts := map[any]bool{}
	for _, m := range upcoming() {
		starts[m["startsAt"]] = true
	}
	if len(starts) != 1 || !starts["2026-12-04T18:00:00Z"] {
		t.Fatalf("after two days without work: %v", starts)
	}
	a.do(t, request{path: "/tournaments?upcoming=true&status=finished"}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")

	a.relogin(t, &admin) // two days later
	if r := a.do(t, request{method: http.MethodDelete, path: "/admin/tournament-schedules/" + schedule["id"].(string), header: admin.auth}); r.Code != http.StatusOK || r.json(t)["stoppedAt"] == nil {
		t.Fatalf("stop: %d %s", r.Code, r.Body)
	}
	clk.advance(24 * time.Hour) // the last occurrence started; none comes after it
	if got := upcoming(); len(got) != 0 {
		t.Fatalf("a stopped schedule made another arena: %v", got)
	}
	var n int
	if err := a.DB.NewSelect().Table("tournaments").Where("schedule_id = ?", schedule["id"]).ColumnExpr("count(*)").Scan(context.Background(), &n); err != nil || n != 2 {
		t.Fatalf("the schedule made %d arenas (%v), want 2", n, err)
	}
	var actions []string
	for _, e := range a.auditLog(t, admin.auth, "") {
		actions = append(actions, e.Action)
	}
	if len(actions) < 2 || actions[0] != "tournament.schedule.stop" || actions[1] != "tournament.schedule" {
		t.Errorf("the audit log: %v", actions)
	}
}
