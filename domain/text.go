package domain

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// UserText is the one check of text people write (usernames, display
// names, bios, chat messages, support tickets): invalid UTF-8 is replaced,
// line breaks are normalised to \n (a browser's form sends \r\n), and
// surrounding white space is trimmed. It refuses, with VALIDATION_ERROR
// naming field, the control characters (U+0000-U+001F, but \n where
// multiline, and U+007F-U+009F) and the direction embeddings, overrides
// and isolates (U+202A-U+202E, U+2066-U+2069) that can make a text read
// other than it is, and a text longer than max characters (runes).
func UserText(field, text string, multiline bool, max int) (string, error) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.TrimSpace(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text))
	for _, r := range text {
		if (r == '\n' && multiline) || !forbidden(r) {
			continue
		}
		what := "invisible control characters (such as tabs)"
		if r >= 0x202A {
			what = "invisible characters that reverse or reorder the text"
		}
		return "", Invalid(map[string]string{field: "must not contain " + what})
	}
	if n := utf8.RuneCountInString(text); n > max {
		return "", Invalid(map[string]string{field: "must be at most " + strconv.Itoa(max) + " characters long"})
	}
	return text, nil
}

func forbidden(r rune) bool {
	return r < 0x20 || (r >= 0x7F && r <= 0x9F) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}
