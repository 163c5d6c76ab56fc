package api

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"wager/domain/game"
)

// The detail of GET /games/:id is shared by the requests that read it from
// memory: encoding it with their spectator counts, all at once, changes
// nothing of it, and each gets its own count.
func TestACachedDetailIsSharedUnchanged(t *testing.T) {
	d := &cachedDetail{GameDetail: GameDetail{Meta: game.Meta{GameID: "g1", Status: game.StatusActive, LastSeq: 4, SpectatorCount: 7,
		Players: []game.Seat{{UserID: "u1", Username: "alice"}, {UserID: "u2", Username: "bob", Seat: 1}}}, EscrowAddress: "escrow"}}
	was, err := json.Marshal(d.GameDetail)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 50 {
				count := (r + n) % 3
				body, err := d.encoded(count)
				var got struct {
					SpectatorCount int `json:"spectatorCount"`
				}
				if err == nil {
					err = json.Unmarshal(body, &got)
				}
				if err == nil && got.SpectatorCount != count {
					err = fmt.Errorf("encoded with %d spectators: %s", count, body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if now, _ := json.Marshal(d.GameDetail); string(now) != string(was) {
		t.Fatalf("the shared detail changed:\n%s\nwas\n%s", now, was)
	}
}
