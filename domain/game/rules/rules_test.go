package rules

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"wager/domain"
)

// t0 is the start of every test game.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// seeded returns a deterministic source of salts.
func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

// code is the domain error code of err, "" for nil.
func code(err error) string {
	if err == nil {
		return ""
	}
	return domain.ErrorCode(err)
}

// fields is the field map of a VALIDATION_ERROR.
func fields(err error) map[string]string {
	var e *domain.Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	return string(b)
}

func TestAvailable(t *testing.T) {
	got := Available()
	want := []Info{
		{GameType: "connect4", Name: "Connect Four", MinPlayers: 2, MaxPlayers: 2, Settings: map[string]int{"turnSeconds": 30}},
		{GameType: "rps", Name: "Rock, paper, scissors", MinPlayers: 2, MaxPlayers: 2,
			Settings: map[string]int{"rounds": 3, "roundSeconds": 20}},
	}
	if len(got) != len(want) {
		t.Fatalf("Available() has %d types, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.GameType != w.GameType || g.Name != w.Name || g.MinPlayers != w.MinPlayers || g.MaxPlayers != w.MaxPlayers ||
			!reflect.DeepEqual(g.Settings, w.Settings) {
			t.Errorf("Available()[%d]:\n got %+v\nwant %+v", i, g, w)
		}
		if g.Description == "" || len(g.SettingsHelp) != len(w.Settings) {
			t.Errorf("%s: description %q, settingsHelp %v: want a description and help for each setting", g.GameType, g.Description, g.SettingsHelp)
		}
		if r, ok := Get(w.GameType); !ok || r.Info().GameType != w.GameType {
			t.Errorf("Get(%q) = %v, %v", w.GameType, r, ok)
		}
		// The defaults are what ParseSettings gives for no settings.
		r, _ := Get(w.GameType)
		norm, err := r.ParseSettings(nil)
		if err != nil || norm == nil {
			t.Fatalf("%s ParseSettings(nil) = %s, %v", w.GameType, norm, err)
		}
		var m map[string]any
		if err := json.Unmarshal(norm, &m); err != nil || len(m) != len(w.Settings)+1 || m["gameType"] != w.GameType {
			t.Errorf("%s defaults %s, want %v", w.GameType, norm, w.Settings)
		}
	}
	if _, ok := Get("chess"); ok {
		t.Errorf(`Get("chess") found a game type`)
	}
	if s := mustJSON(t, got[1]); s == "" || !json.Valid([]byte(s)) {
		t.Errorf("Info does not marshal: %s", s)
	}
}

func TestParseSettings(t *testing.T) {
	tests := []struct {
		game, raw string
		want      string // normalized JSON, or "" for an error
		field     string // the field named by the VALIDATION_ERROR
	}{
		{"rps", "", `{"gameType":"rps","roundSeconds":20,"rounds":3}`, ""},
		{"rps", "null", `{"gameType":"rps","roundSeconds":20,"rounds":3}`, ""},
		{"rps", " {} ", `{"gameType":"rps","roundSeconds":20,"rounds":3}`, ""},
		{"rps", `{"rounds": 5}`, `{"gameType":"rps","roundSeconds":20,"rounds":5}`, ""},
		{"rps", `{"rounds": 9, "roundSeconds": 3}`, `{"gameType":"rps","roundSeconds":3,"rounds":9}`, ""},
		{"rps", `{"rounds": 1, "roundSeconds": 120}`, `{"gameType":"rps","roundSeconds":120,"rounds":1}`, ""},
		{"rps", `{"rounds": 7.0, "roundSeconds": null}`, `{"gameType":"rps","roundSeconds":20,"rounds":7}`, ""},
		{"rps", `{"rounds": 0}`, "", "settings.rounds"},
		{"rps", `{"rounds": 2}`, "", "settings.rounds"},
		{"rps", `{"rounds": 11}`, "", "settings.rounds"},
		{"rps", `{"rounds": -1}`, "", "settings.rounds"},
		{"rps", `{"rounds": 3.5}`, "", "settings.rounds"},
		{"rps", `{"rounds": "x"}`, "", "settings.rounds"},
		{"rps", `{"rounds": "3"}`, "", "settings.rounds"},
		{"rps", `{"rounds": 1e400}`, "", "settings.rounds"},
		{"rps", `{"gameType":"rps","roundSeconds": 2}`, "", "settings.roundSeconds"},
		{"rps", `{"gameType":"rps","roundSeconds": 121}`, "", "settings.roundSeconds"},
		{"rps", `{"round": 3}`, "", "settings.round"},
		{"rps", `[3]`, "", "settings"},
		{"rps", `"rounds"`, "", "settings"},
		{"rps", `{"rounds": 3`, "", "settings"},
		{"connect4", "", `{"gameType":"connect4","turnSeconds":30}`, ""},
		{"connect4", `{"gameType":"connect4","turnSeconds": 5}`, `{"gameType":"connect4","turnSeconds":5}`, ""},
		{"connect4", `{"gameType":"connect4","turnSeconds": 300}`, `{"gameType":"connect4","turnSeconds":300}`, ""},
		{"connect4", `{"gameType":"connect4","turnSeconds": 4}`, "", "settings.turnSeconds"},
		{"connect4", `{"gameType":"connect4","turnSeconds": 301}`, "", "settings.turnSeconds"},
		{"connect4", `{"rounds": 3}`, "", "settings.rounds"},
		// The game type may be named, as answers name it; only as itself.
		{"rps", `{"gameType": "rps", "rounds": 5}`, `{"gameType":"rps","roundSeconds":20,"rounds":5}`, ""},
		{"connect4", `{"gameType": "connect4"}`, `{"gameType":"connect4","turnSeconds":30}`, ""},
		{"rps", `{"gameType": "connect4", "rounds": 5}`, "", "settings.gameType"},
		{"connect4", `{"gameType": 4}`, "", "settings.gameType"},
	}
	for _, tt := range tests {
		t.Run(tt.game+" "+tt.raw, func(t *testing.T) {
			r, _ := Get(tt.game)
			got, err := r.ParseSettings(json.RawMessage(tt.raw))
			if tt.want != "" {
				if err != nil || string(got) != tt.want {
					t.Fatalf("ParseSettings(%s) = %s, %v; want %s", tt.raw, got, err, tt.want)
				}
				return
			}
			if code(err) != domain.CodeValidation || fields(err)[tt.field] == "" {
				t.Fatalf("ParseSettings(%s) = %s, %v (fields %v); want VALIDATION_ERROR naming %s", tt.raw, got, err, fields(err), tt.field)
			}
		})
	}
}

func TestStartRefusesBadPlayersAndSettings(t *testing.T) {
	for _, r := range []Rules{RPS{}, ConnectFour{}} {
		for _, players := range [][]string{nil, {"ann"}, {"ann", "ann"}, {"ann", ""}, {"ann", "bob", "cy"}} {
			if _, _, err := r.Start("g", players, nil, t0); code(err) != domain.CodeValidation {
				t.Errorf("%s Start with players %q: %v, want VALIDATION_ERROR", r.Info().GameType, players, err)
			}
		}
		if _, _, err := r.Start("g", []string{"ann", "bob"}, json.RawMessage(`{"nope": 1}`), t0); code(err) != domain.CodeValidation {
			t.Errorf("%s Start with bad settings: %v, want VALIDATION_ERROR", r.Info().GameType, err)
		}
		if _, err := r.Load([]byte(`{}`)); err == nil {
			t.Errorf("%s Load({}) succeeded, want an error", r.Info().GameType)
		}
		if _, err := r.Load([]byte(`nope`)); err == nil {
			t.Errorf("%s Load(nope) succeeded, want an error", r.Info().GameType)
		}
	}
}
