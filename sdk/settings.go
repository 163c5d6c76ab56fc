package wager

import (
	"encoding/json"

	"wager.example.com/sdk/api"
)

// Settings returns a game type's settings for a lobby or a challenge from
// their members ({"rounds": 3} for rps), nil for none (the defaults). The
// server checks them: VALIDATION_ERROR names a member it refuses.
func Settings(members map[string]any) *api.GameSettings {
	if len(members) == 0 {
		return nil
	}
	b, err := json.Marshal(members)
	if err != nil {
		return nil // only JSON values are settings
	}
	var s api.GameSettings
	s.UnmarshalJSON(b)
	return &s
}

// SettingsMap returns the members of settings an answer carried (a
// lobby's, a game's), empty when there are none.
func SettingsMap(s api.GameSettings) map[string]any {
	out := map[string]any{}
	if b, err := s.MarshalJSON(); err == nil {
		json.Unmarshal(b, &out)
	}
	return out
}
