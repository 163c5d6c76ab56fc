package rules

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"wager/domain"
)

func startC4(t *testing.T, settings string) (State, []Event) {
	t.Helper()
	st, events, err := ConnectFour{}.Start(gid, duo, json.RawMessage(settings), t0)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return st, events
}

// dropAll plays columns in turn, ann first, one second apart, and returns
// the last move's events. Every move must be accepted.
func dropAll(t *testing.T, st State, columns []int) []Event {
	t.Helper()
	var events []Event
	for i, c := range columns {
		var err error
		events, err = st.Move(duo[i%2], json.RawMessage(`{"column": `+strconv.Itoa(c)+`}`), t0.Add(time.Duration(i)*time.Second), nil)
		if err != nil {
			t.Fatalf("move %d (%s in column %d): %v", i+1, duo[i%2], c, err)
		}
		if i < len(columns)-1 && st.Outcome().Done {
			t.Fatalf("the game ended early at move %d: %+v", i+1, st.Outcome())
		}
	}
	return events
}

func TestConnectFourWins(t *testing.T) {
	tests := []struct {
		name    string
		columns []int
		line    [][2]int // [row, column], row 0 at the top
	}{
		{"horizontal", []int{0, 0, 1, 1, 2, 2, 3}, [][2]int{{5, 0}, {5, 1}, {5, 2}, {5, 3}}},
		{"horizontal, filling the gap", []int{0, 0, 1, 1, 3, 3, 2}, [][2]int{{5, 0}, {5, 1}, {5, 2}, {5, 3}}},
		{"vertical", []int{0, 1, 0, 1, 0, 1, 0}, [][2]int{{2, 0}, {3, 0}, {4, 0}, {5, 0}}},
		{"diagonal up to the right", []int{0, 1, 1, 2, 2, 3, 2, 3, 6, 3, 3}, [][2]int{{2, 3}, {3, 2}, {4, 1}, {5, 0}}},
		{"diagonal up to the left", []int{6, 5, 5, 4, 4, 3, 4, 3, 0, 3, 3}, [][2]int{{2, 3}, {3, 4}, {4, 5}, {5, 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := startC4(t, "")
			events := dropAll(t, st, tt.columns)
			if got, want := st.Outcome(), (Outcome{Done: true, Winner: "ann", Reason: "connect4"}); got != want {
				t.Fatalf("Outcome() = %+v, want %+v", got, want)
			}
			wantNames(t, "winning move", events, "game:connect4:move")
			data := decoded(t, events[0].Data)
			if data["turn"] != nil || data["deadline"] != nil || mustJSON(t, data["line"]) != mustJSON(t, tt.line) {
				t.Errorf("winning move event = %v, want turn and deadline null and line %v", data, tt.line)
			}
			pub := decoded(t, st.Public(t0))
			if mustJSON(t, pub["line"]) != mustJSON(t, tt.line) || pub["turn"] != nil ||
				!reflect.DeepEqual(pub["scores"], map[string]any{"ann": 1.0, "bob": 0.0}) ||
				pub["round"].(map[string]any)["phase"] != "finished" {
				t.Errorf("public view after the win: %v", pub)
			}
			if !st.Deadline().IsZero() {
				t.Errorf("Deadline() = %v after the end, want zero", st.Deadline())
			}
			if _, err := st.Move("bob", json.RawMessage(`{"column": 5}`), t0, nil); code(err) != domain.CodeGameNotActive {
				t.Errorf("move after the end: %v, want GAME_NOT_ACTIVE", err)
			}
		})
	}
}

// drawGame fills the board with no four in a row anywhere.
var drawGame = []int{1, 5, 4, 0, 2, 4, 6, 1, 6, 4, 5, 5, 0, 5, 5, 5, 1, 2, 4, 0, 0, 0, 0, 1, 2, 6, 1, 3, 3, 2, 2, 4, 4, 2, 3, 1, 6, 3, 3, 6, 3, 6}

func TestConnectFourFullBoardIsADraw(t *testing.T) {
	st, _ := startC4(t, "")
	events := dropAll(t, st, drawGame)
	if got, want := st.Outcome(), (Outcome{Done: true, Reason: "board-full"}); got != want {
		t.Fatalf("Outcome() = %+v, want %+v", got, want)
	}
	if data := decoded(t, events[0].Data); data["turn"] != nil || data["line"] != nil || data["moveNumber"] != 42.0 {
		t.Errorf("last move event = %v", data)
	}
	pub := decoded(t, st.Public(t0))
	board := pub["board"].([]any)
	if len(board) != C4Rows {
		t.Fatalf("board has %d rows, want %d", len(board), C4Rows)
	}
	count := map[any]int{}
	for _, row := range board {
		if len(row.([]any)) != C4Columns {
			t.Fatalf("a row has %d cells, want %d", len(row.([]any)), C4Columns)
		}
		for _, cell := range row.([]any) {
			count[cell]++
		}
	}
	if !reflect.DeepEqual(count, map[any]int{"ann": 21, "bob": 21}) {
		t.Errorf("full board holds %v, want 21 pieces each", count)
	}
	if len(pub["history"].([]any)) != 42 {
		t.Errorf("history has %d moves, want 42", len(pub["history"].([]any)))
	}
}

func TestConnectFourRefusedMoves(t *testing.T) {
	st, _ := startC4(t, `{"turnSeconds": 10}`)
	dropAll(t, st, []int{0, 0, 0, 0, 0, 0}) // column 0 is full, ann's turn
	deadline := st.Deadline()
	at := deadline.Add(-time.Second)
	tests := []struct {
		name, player, move string
		at                 time.Time
		want               string
	}{
		{"not your turn", "bob", `{"column": 3}`, at, domain.CodeNotYourTurn},
		{"full column", "ann", `{"column": 0}`, at, domain.CodeInvalidMove},
		{"full column, bare", "ann", `0`, at, domain.CodeInvalidMove},
		{"column 7", "ann", `{"column": 7}`, at, domain.CodeInvalidMove},
		{"column -1", "ann", `-1`, at, domain.CodeInvalidMove},
		{"column as a string", "ann", `{"column": "3"}`, at, domain.CodeInvalidMove},
		{"fractional column", "ann", `3.5`, at, domain.CodeInvalidMove},
		{"no column", "ann", `{}`, at, domain.CodeInvalidMove},
		{"unknown member", "ann", `{"column": 3, "row": 1}`, at, domain.CodeInvalidMove},
		{"null", "ann", `null`, at, domain.CodeInvalidMove},
		{"a word", "ann", `"rock"`, at, domain.CodeInvalidMove},
		{"at the deadline", "ann", `{"column": 3}`, deadline, domain.CodeInvalidMove},
		{"not a player", "cy", `{"column": 3}`, at, domain.CodeNotAPlayer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := st.MarshalJSON()
			events, err := st.Move(tt.player, json.RawMessage(tt.move), tt.at, nil)
			if code(err) != tt.want || events != nil {
				t.Errorf("Move(%s, %s) = %v, %v; want %s", tt.player, tt.move, events, err, tt.want)
			}
			if after, _ := st.MarshalJSON(); string(after) != string(before) {
				t.Errorf("a refused move changed the state:\n got %s\nwant %s", after, before)
			}
		})
	}
	// Both move forms work.
	if events, err := st.Move("ann", json.RawMessage(` 3 `), at, nil); err != nil || len(events) != 1 {
		t.Fatalf("bare integer move: %v, %v", events, err)
	}
	events, err := st.Move("bob", json.RawMessage(`{"column": 3}`), at, nil)
	if err != nil {
		t.Fatalf("object move: %v", err)
	}
	want := map[string]any{"userId": "bob", "column": 3.0, "row": 4.0, "moveNumber": 8.0, "turn": "ann",
		"deadline": at.Add(10 * time.Second).Format(time.RFC3339Nano)}
	if got := decoded(t, events[0].Data); !reflect.DeepEqual(got, want) {
		t.Errorf("move event:\n got %v\nwant %v", got, want)
	}
}

func TestConnectFourTimeoutLoses(t *testing.T) {
	st, events := startC4(t, `{"turnSeconds": 5}`)
	wantNames(t, "start", events, "game:connect4:start")
	if data := decoded(t, events[0].Data); data["turn"] != "ann" || data["deadline"] != t0.Add(5*time.Second).Format(time.RFC3339Nano) {
		t.Errorf("start event = %v, want ann on turn until t0+5s", data)
	}
	dropAll(t, st, []int{3}) // ann at t0, bob on turn until t0+5s
	if e := st.Expire(t0.Add(5*time.Second - time.Nanosecond)); e != nil {
		t.Fatalf("Expire before the deadline = %v, want nil", e)
	}
	events = st.Expire(t0.Add(6 * time.Second))
	wantNames(t, "timeout", events, "game:connect4:timeout")
	if data := decoded(t, events[0].Data); data["userId"] != "bob" || data["winnerId"] != "ann" {
		t.Errorf("timeout event = %v, want bob timed out and ann won", data)
	}
	if got, want := st.Outcome(), (Outcome{Done: true, Winner: "ann", Reason: "timeout", TimedOut: true}); got != want {
		t.Errorf("Outcome() = %+v, want %+v", got, want)
	}
	if e := st.Expire(t0.Add(time.Hour)); e != nil {
		t.Errorf("second Expire = %v, want nil", e)
	}
}

func TestConnectFourResign(t *testing.T) {
	st, _ := startC4(t, "")
	dropAll(t, st, []int{3, 3})
	events, err := st.Resign("ann", t0)
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, "resign", events, "game:connect4:resign")
	if got, want := st.Outcome(), (Outcome{Done: true, Winner: "bob", Reason: "resign"}); got != want {
		t.Errorf("Outcome() = %+v, want %+v", got, want)
	}
	if _, err := st.Resign("bob", t0); code(err) != domain.CodeGameNotActive {
		t.Errorf("resign after the end: %v, want GAME_NOT_ACTIVE", err)
	}
}

func TestConnectFourStateSurvivesLoad(t *testing.T) {
	st, _ := startC4(t, `{"turnSeconds": 60}`)
	dropAll(t, st, []int{0, 0, 1, 1, 2, 2})
	raw, err := st.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := ConnectFour{}.Load(raw)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if again, _ := loaded.MarshalJSON(); string(again) != string(raw) {
		t.Fatalf("round trip changed the state:\n got %s\nwant %s", again, raw)
	}
	if got, want := mustJSON(t, loaded.Public(t0)), mustJSON(t, st.Public(t0)); got != want {
		t.Errorf("Public after Load:\n got %s\nwant %s", got, want)
	}
	if _, err := loaded.Move("bob", json.RawMessage(`3`), t0.Add(7*time.Second), nil); code(err) != domain.CodeNotYourTurn {
		t.Errorf("bob after Load: %v, want NOT_YOUR_TURN", err)
	}
	if _, err := loaded.Move("ann", json.RawMessage(`3`), t0.Add(7*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := loaded.Outcome(), (Outcome{Done: true, Winner: "ann", Reason: "connect4"}); got != want {
		t.Errorf("Outcome() after Load and the winning move = %+v, want %+v", got, want)
	}
}

// The platform was down when Bob's turn ran out: Resume gives him the full
// turn time again from the moment the service is back, and the game goes
// on with the usual turn times.
func TestConnectFourResumeGivesTheTurnItsFullTimeAgain(t *testing.T) {
	st, _ := startC4(t, `{"turnSeconds": 5}`)
	dropAll(t, st, []int{3}) // ann at t0, bob on turn until t0+5s
	back := t0.Add(30 * time.Second)
	if !st.Resume(back) {
		t.Fatal("Resume of a running game = false, want true")
	}
	if want := back.Add(5 * time.Second); !st.Deadline().Equal(want) {
		t.Fatalf("Deadline() after Resume = %v, want %v (back + turnSeconds)", st.Deadline(), want)
	}
	if v := decoded(t, st.Public(back)); v["turn"] != "bob" || v["timer"].(map[string]any)["remainingMs"] != 5000.0 {
		t.Errorf("Public after Resume = %v, want bob on turn with 5000 ms left", v)
	}
	if e := st.Expire(back.Add(5*time.Second - time.Nanosecond)); e != nil {
		t.Fatalf("Expire before the new deadline = %v, want nil", e)
	}
	moved := back.Add(4 * time.Second)
	if _, err := st.Move("bob", json.RawMessage(`{"column": 3}`), moved, nil); err != nil {
		t.Fatalf("bob's move after Resume: %v", err)
	}
	if want := moved.Add(5 * time.Second); !st.Deadline().Equal(want) {
		t.Errorf("ann's deadline = %v, want %v (a normal turn)", st.Deadline(), want)
	}
	if _, err := st.Resign("ann", moved); err != nil {
		t.Fatal(err)
	}
	if st.Resume(moved) || !st.Deadline().IsZero() {
		t.Errorf("Resume of a finished game = true or a deadline %v, want false and none", st.Deadline())
	}
}
