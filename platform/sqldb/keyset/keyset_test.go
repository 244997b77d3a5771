package keyset_test

import (
	"encoding/base64"
	"errors"
	"math"
	"testing"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb/keyset"
)

func TestCursorRoundTrip(t *testing.T) {
	tests := []keyset.Cursor{
		{Key: 1767225600000, ID: "hold_01"},
		{Key: 0, ID: "a"},
		{Key: -5, ID: "with:colons:inside"},
		{Key: math.MaxInt64, ID: "évent ünicode"},
	}
	for _, c := range tests {
		s := c.String()
		got, err := keyset.Parse(s, keyset.Cursor{})
		if err != nil || got != c {
			t.Errorf("Parse(%v.String() = %q) = %v, %v; want %v", c, s, got, err, c)
		}
	}
}

func TestParseOfNothingIsTheFirstPage(t *testing.T) {
	first := keyset.Cursor{Key: math.MaxInt64}
	if got, err := keyset.Parse("", first); err != nil || got != first {
		t.Errorf("Parse(\"\", %v) = %v, %v; want %v", first, got, err, first)
	}
}

func TestParseRefusesWhatStringDidNotMake(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	tests := []struct{ name, in string }{
		{"not base64url", "%%"},
		{"no separator", b64([]byte("12345"))},
		{"key not a number", b64([]byte("soon:evt-1"))},
		{"no id", b64([]byte("12345:"))},
		{"NUL in the id", b64([]byte("12345:a\x00b"))},
		{"invalid UTF-8 in the id", b64([]byte("1:\xff"))},
		{"a line break in the id", b64([]byte("1:evt\n"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keyset.Parse(tt.in, keyset.Cursor{})
			if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Code != problem.Invalid || pe.Field != "cursor" {
				t.Errorf("Parse(%q) = %v, %v; want an invalid problem naming cursor", tt.in, got, err)
			}
		})
	}
}
