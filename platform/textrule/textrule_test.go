package textrule_test

import (
	"testing"

	"boxoffice.dev/platform/textrule"
)

func TestValid(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		text, free bool // whether Valid and ValidFree accept in
	}{
		{"empty", "", true, true},
		{"an id", "evt-001", true, true},
		{"accents and emoji", "São Paulo 🎫", true, true},
		{"NUL", "a\x00b", false, false},
		{"escape", "a\x1bb", false, false},
		{"DEL", "a\x7fb", false, false},
		{"tab", "a\tb", false, true},
		{"line feed", "a\nb", false, true},
		{"carriage return", "a\r\nb", false, true},
		{"invalid UTF-8", "a\xffb", false, false},
		{"a cut multi-byte character", "S\xc3", false, false},
		{"NUL after non-ASCII", "é\x00", false, false},
		{"C1 control (valid UTF-8, stored fine)", "a\u0085b", true, true},
	}
	for _, tt := range tests {
		if got := textrule.Valid(tt.in); got != tt.text {
			t.Errorf("Valid(%q) = %v, want %v", tt.in, got, tt.text)
		}
		if got := textrule.ValidFree(tt.in); got != tt.free {
			t.Errorf("ValidFree(%q) = %v, want %v", tt.in, got, tt.free)
		}
	}
}

func TestIdentifier(t *testing.T) {
	for name, want := range map[string]bool{
		"id": true, "ids": true, "email": true, "key": true, "event_id": true, "seat_ids": true,
		"api_key": true, "idempotency_key": true, "eventId": true, "seatIds": true, "apiKey": true,
		"title": false, "description": false, "question": false, "valid": false, "kid": false,
		"_id": false, "Id": false, "paid": false, "keyword": false, "monkey": false,
	} {
		if got := textrule.Identifier(name); got != want {
			t.Errorf("Identifier(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, field, in, rule string
		ok                    bool
	}{
		{"a line break in free text", "title", "one\ntwo", textrule.Free, true},
		{"a line break in an id", "event_id", "evt\n", textrule.Strict, false},
		{"NUL in free text", "title", "a\x00", textrule.Free, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if rule, ok := textrule.Check(tt.field, tt.in); rule != tt.rule || ok != tt.ok {
				t.Errorf("Check(%q, %q) = %q, %v; want %q, %v", tt.field, tt.in, rule, ok, tt.rule, tt.ok)
			}
		})
	}
}
