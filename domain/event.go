package domain

// Event is something that happened in a game's room, the same for everyone
// there (players and spectators alike). Data is a struct with json tags,
// one per event name; it never carries hidden information.
type Event struct {
	Name string // e.g. "game:rps:round:start"
	Data any
}
