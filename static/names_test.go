package static_test

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"wager/domain"
	"wager/static"
)

// nameCompared is a script's comparison of a frame's notice or event with
// a name: m.notice === "game:matched".
var nameCompared = regexp.MustCompile(`\.(notice|event)\s*===?\s*["']([^"']*)["']`)

// TestScriptsNameDeclaredNotices: the notices and events the site's own
// scripts wait for are ones the server declares (a script cannot import
// the constants, so a misspelled name would wait forever).
func TestScriptsNameDeclaredNotices(t *testing.T) {
	events := slices.Concat(domain.GameEvents, domain.TournamentEvents, []domain.EventName{domain.EventSpectators})
	found := 0
	err := fs.WalkDir(static.FS, "js", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".min.js") {
			return err
		}
		src, err := fs.ReadFile(static.FS, path)
		if err != nil {
			return err
		}
		for _, m := range nameCompared.FindAllStringSubmatch(string(src), -1) {
			found++
			declared := slices.Contains(events, domain.EventName(m[2]))
			if m[1] == "notice" {
				declared = slices.Contains(domain.Notices, domain.NoticeKind(m[2]))
			}
			if !declared {
				t.Errorf("%s waits for the %s %q, which the server does not declare", path, m[1], m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no script compares a notice or an event with a name: this test would prove nothing")
	}
}
