package live

import (
	"encoding/json"
	"testing"

	"wager/domain"
)

// TestEachKindsFramesAreTheProtocolsBytes pins the frames of both kinds
// of room to the bytes clients were written against: the field order,
// the frame types and the name of the room's id.
func TestEachKindsFramesAreTheProtocolsBytes(t *testing.T) {
	g, tour := wireOf(domain.GameStream), wireOf(domain.TournamentStream)
	data := json.RawMessage(`{"a":1}`)
	for _, c := range []struct {
		got  []byte
		want string
	}{
		{g.eventFrame(Event{Stream: domain.GameStreamOf("g1"), Seq: 7, Name: "game:move", Data: data}, false),
			`{"type":"event","event":"game:move","gameId":"g1","seq":7,"data":{"a":1}}`},
		{g.joinedFrame("g1", Joined{Seq: 3, Player: true, State: data}),
			`{"type":"joined","gameId":"g1","seq":3,"role":"player","state":{"a":1}}`},
		{g.joinedFrame("g1", Joined{Seq: 0, State: data}),
			`{"type":"joined","gameId":"g1","seq":0,"role":"spectator","state":{"a":1}}`},
		{g.resumedFrame("g1", 5), `{"type":"resumed","gameId":"g1","seq":5}`},
		{g.resyncFrame("g1"), `{"type":"resync","gameId":"g1"}`},
		{g.leftFrame("g1"), `{"type":"left","gameId":"g1"}`},
		{tour.eventFrame(Event{Stream: domain.TournamentStreamOf("t1"), Seq: 2, Name: "tournament:pairing", Data: data}, false),
			`{"type":"event","event":"tournament:pairing","tournamentId":"t1","seq":2,"data":{"a":1}}`},
		{tour.joinedFrame("t1", Joined{Seq: 4, Player: true, State: data}),
			`{"type":"joined-tournament","tournamentId":"t1","seq":4,"tournament":{"a":1}}`},
		{tour.resumedFrame("t1", 9), `{"type":"resumed-tournament","tournamentId":"t1","seq":9}`},
		{tour.resyncFrame("t1"), `{"type":"resync-tournament","tournamentId":"t1"}`},
		{tour.leftFrame("t1"), `{"type":"left-tournament","tournamentId":"t1"}`},
		{mustJSON(g.errorIn(ErrorFrame{Type: "error", Code: "NOT_FOUND"}, "g1")), `{"type":"error","code":"NOT_FOUND","gameId":"g1"}`},
		{mustJSON(tour.errorIn(ErrorFrame{Type: "error", Code: "NOT_FOUND"}, "t1")), `{"type":"error","code":"NOT_FOUND","tournamentId":"t1"}`},
	} {
		if string(c.got) != c.want {
			t.Errorf("got  %s\nwant %s", c.got, c.want)
		}
	}
}
