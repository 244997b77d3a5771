package graph

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"boxoffice.dev/platform/problem"
)

// The rules that make a mobile answer small. They do no I/O and are the whole difference
// between a card here and an event on the web: fewer fields, shorter text, smaller images.

// maxImageWidth bounds imageUrl's width: a phone at 3x density is under 1300 px wide.
const maxImageWidth = 1600

// scaledImage asks the image host for raw scaled to width pixels (its "w" parameter), so a
// phone downloads the size it shows: a 320 px card image instead of the original.
func scaledImage(raw string, width int) (string, error) {
	if width < 1 || width > maxImageWidth {
		return "", problem.InvalidField("width", "want 1 to %d", maxImageWidth)
	}
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw, nil // the catalog validated it; an unparsable one is shown as it is
	}
	q := u.Query()
	q.Set("w", strconv.Itoa(width))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// summaryLength is about two lines of a phone's screen.
const summaryLength = 140

// summary cuts text to at most max characters, at a word boundary when there is one, with an
// ellipsis when it cut.
func summary(text string, max int) string {
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	runes := []rune(text)
	cut := string(runes[:max-1])
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:") + "…"
}
