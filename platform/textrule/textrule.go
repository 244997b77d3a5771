// Package textrule is the one rule for text a request carries, whatever the transport: valid
// UTF-8 without control characters, with tab and line breaks allowed in free text (a title,
// a question) but not in what names things (ids, keys, emails, paths).
//
// The rule exists for storage as much as for the client: PostgreSQL's text type refuses NUL
// and invalid UTF-8 outright (SQLSTATE 22021), so a value holding them would reach the
// database only to fail there as an internal error, where SQLite would store it. Transports
// apply it where text arrives: httpapi.DecodeJSON to JSON bodies, httpserver.RefuseBadText
// to paths, queries and key headers, and grpcserver to every message (InMessage). Each
// reports a broken rule as an Invalid problem naming the field, with Strict or Free as the
// message.
package textrule

import (
	"strings"
	"unicode/utf8"
)

// The two rules, worded as the message of the 400 that refuses a field.
const (
	// Strict is the rule for identifiers: no control characters at all.
	Strict = "want valid UTF-8 text without control characters"
	// Free is the rule for free text: tab, line feed and carriage return are allowed, as a
	// pasted paragraph holds them; NUL and the other C0 controls are still refused.
	Free = "want valid UTF-8 text without control characters other than tab and line breaks"
)

// Valid reports whether s follows Strict: valid UTF-8 without C0 controls (U+0000 to
// U+001F) or DEL (U+007F).
func Valid(s string) bool { return valid(s, false) }

// ValidFree reports whether s follows Free: Valid, but tab, line feed and carriage return
// are allowed.
func ValidFree(s string) bool { return valid(s, true) }

// Identifier reports whether a request field named name holds identifiers, held to Strict
// rather than Free: id, ids, email, key, and names ending in _id, _ids, _key (JSON and proto
// field names here are snake_case) or Id, Ids, Key (camelCase). Going by names means a tab
// in an event_id is refused where it arrives, as in a path, without every handler checking
// its own ids; the price is that a field named so must never be prose, and none is.
func Identifier(name string) bool {
	switch name {
	case "id", "ids", "email", "key":
		return true
	}
	for _, suffix := range []string{"_id", "_ids", "_key", "Id", "Ids", "Key"} {
		if len(name) > len(suffix) && strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// Check returns the rule for a field named name (Strict for an Identifier, else Free) and
// whether s follows it.
func Check(name, s string) (rule string, ok bool) {
	if Identifier(name) {
		return Strict, Valid(s)
	}
	return Free, ValidFree(s)
}

// valid reports whether s is valid UTF-8 without C0 controls or DEL, except tab, line feed
// and carriage return when free. The byte loop is enough for the controls: every byte of a
// multi-byte UTF-8 sequence is 0x80 or above, so a byte below 0x80 is always a whole
// character.
func valid(s string, free bool) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			ascii = false
		case c < 0x20 || c == 0x7f:
			if !free || c != '\t' && c != '\n' && c != '\r' {
				return false
			}
		}
	}
	return ascii || utf8.ValidString(s)
}
