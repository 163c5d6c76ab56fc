package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"wager/db/dbtest"
)

// TestMain gives the package its own database. The browser is started on
// first use (see browser in harness_test.go) and shared by every test.
//
// dbtest.Main runs the tests and then calls os.Exit, so nothing can run
// after the tests here to stop the browser explicitly. It needs no stopping:
// os.Exit closes the Playwright driver's stdin, the driver then exits and
// takes Chromium down with it.
//
// The screenshots of failures of earlier runs go first, so that those in
// e2e/screenshots/ are this run's.
func TestMain(m *testing.M) {
	old, _ := filepath.Glob(filepath.Join("screenshots", "FAILED-*.png"))
	for _, f := range old {
		os.Remove(f)
	}
	dbtest.Main(m)
}
