package chat

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"wager/domain"
)

// MaxText is the longest message, in characters (runes), after cleaning.
const MaxText = 500

// CleanText returns the text as it is stored: invalid UTF-8 replaced,
// line breaks normalised to \n, tabs turned into spaces, every other
// control character (C0, DEL, C1) and the bidirectional overrides that
// can disguise a message removed, and surrounding white space trimmed.
// Newlines are kept so that a message may have several lines; everything
// else is kept as typed (no HTML escaping here: escaping belongs to
// whatever renders the text). It returns VALIDATION_ERROR for field
// "text" when nothing, or more than MaxText characters, remain.
func CleanText(text string) (string, error) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\t", " ").Replace(text)
	text = strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		if unicode.IsControl(r) || isBidiControl(r) {
			return -1
		}
		return r
	}, text)
	text = strings.TrimSpace(text)
	n := utf8.RuneCountInString(text)
	if n == 0 || n > MaxText {
		return "", domain.Invalid(map[string]string{"text": "1 to 500 characters (after removing control characters and surrounding spaces)"})
	}
	return text, nil
}

// isBidiControl reports the explicit direction embeddings, overrides and
// isolates (U+202A-U+202E, U+2066-U+2069), which can make a message read
// differently from what it contains.
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}
