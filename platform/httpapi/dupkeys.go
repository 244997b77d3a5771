package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// duplicateKey returns the path of the first key that an object in body names twice
// ("seats[2].id"), and whether there is one; body must be valid JSON. Keys compare as decoded
// ("a" and "\u0061" are one key), byte for byte. It reads the body once and allocates only
// for objects of many keys and for escaped keys.
func duplicateKey(body []byte) (path string, dup bool) {
	s := keyScan{b: body}
	return s.value()
}

// keyScan walks valid JSON from b[i].
type keyScan struct {
	b []byte
	i int
}

// value reads the value at s.i and returns the path, below it, of a repeated key.
func (s *keyScan) value() (string, bool) {
	s.space()
	if s.i >= len(s.b) {
		return "", false
	}
	switch s.b[s.i] {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		s.str()
	default: // a number, true, false or null: up to the next delimiter
		for s.i < len(s.b) && !isDelim(s.b[s.i]) {
			s.i++
		}
	}
	return "", false
}

// smallObject is how many keys an object may have before they are looked up in a map
// rather than compared one by one.
const smallObject = 16

func (s *keyScan) object() (string, bool) {
	s.i++ // {
	var keys [][]byte
	var many map[string]struct{}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] == '}' {
			s.i++
			return "", false
		}
		if s.b[s.i] == ',' {
			s.i++
			s.space()
		}
		start := s.i
		s.str()
		key := decodedKey(s.b[start:s.i])
		if seen(keys, many, key) {
			return keyPath(key), true
		}
		if many == nil && len(keys) < smallObject {
			keys = append(keys, key)
		} else {
			if many == nil {
				many = make(map[string]struct{}, 2*smallObject)
				for _, k := range keys {
					many[string(k)] = struct{}{}
				}
			}
			many[string(key)] = struct{}{}
		}
		s.space()
		s.i++ // :
		if p, dup := s.value(); dup {
			return joinPath(keyPath(key), p), true
		}
	}
}

func (s *keyScan) array() (string, bool) {
	s.i++ // [
	for n := 0; ; n++ {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] == ']' {
			s.i++
			return "", false
		}
		if s.b[s.i] == ',' {
			s.i++
		}
		if p, dup := s.value(); dup {
			return joinPath("["+strconv.Itoa(n)+"]", p), true
		}
	}
}

// str moves past the string starting at s.i, quotes included.
func (s *keyScan) str() {
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return
		}
	}
}

func (s *keyScan) space() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isDelim(c byte) bool { return c == ',' || c == ']' || c == '}' || isSpace(c) }

// decodedKey is the key a quoted JSON string decodes to, as encoding/json decodes it. A key
// without escapes and in valid UTF-8 is its own bytes; any other is decoded, which also
// turns invalid UTF-8 into U+FFFD, as encoding/json does, so two keys it would merge compare
// equal.
func decodedKey(quoted []byte) []byte {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	var k string
	if err := json.Unmarshal(quoted, &k); err != nil {
		return inner // not reached on valid JSON
	}
	return []byte(k)
}

// seen reports whether key is among keys or in many.
func seen(keys [][]byte, many map[string]struct{}, key []byte) bool {
	if many != nil {
		_, ok := many[string(key)]
		return ok
	}
	for _, k := range keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// maxKeyInPath is how much of a key a path shows: a key is the client's to choose, and a
// field name in an answer has no need of a kilobyte.
const maxKeyInPath = 64

// keyPath is key as a path segment, cut to maxKeyInPath bytes on a character boundary.
func keyPath(key []byte) string {
	if len(key) <= maxKeyInPath {
		return string(key)
	}
	cut := maxKeyInPath
	for cut > 0 && !utf8.RuneStart(key[cut]) {
		cut--
	}
	return string(key[:cut]) + "…"
}
