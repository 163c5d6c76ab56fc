package chat

import (
	"wager/domain"
)

// MaxText is the longest message, in characters (runes), after cleaning.
const MaxText = 500

// CleanText returns a message's text as it is stored (see
// domain.UserText: line breaks kept, control characters and direction
// overrides refused). It returns VALIDATION_ERROR for field "text" when
// the text is empty, longer than MaxText characters, or holds such a
// character. Everything else is kept as typed (no HTML escaping here:
// escaping belongs to whatever renders the text).
func CleanText(text string) (string, error) {
	clean, err := domain.UserText("text", text, true, MaxText)
	if err != nil {
		return "", err
	}
	if clean == "" {
		return "", domain.Invalid(map[string]string{"text": "must be 1 to 500 characters long"})
	}
	return clean, nil
}
