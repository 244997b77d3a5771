package graph

import (
	"testing"
	"unicode/utf8"

	"boxoffice.dev/platform/problem"
)

func TestScaledImage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		raw      string
		width    int
		want     string
		wantCode problem.Code
	}{
		{"card", "https://images.boxoffice.test/events/evt-001.jpg", 320, "https://images.boxoffice.test/events/evt-001.jpg?w=320", ""},
		{"replaces a width", "https://img.test/a.jpg?w=2000&q=80", 640, "https://img.test/a.jpg?q=80&w=640", ""},
		{"no image", "", 320, "", ""},
		{"zero width", "https://img.test/a.jpg", 0, "", problem.Invalid},
		{"too wide", "https://img.test/a.jpg", 5000, "", problem.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scaledImage(tc.raw, tc.width)
			if tc.wantCode != "" {
				if problem.CodeOf(err) != tc.wantCode {
					t.Errorf("scaledImage(%q, %d) = %q, %v; want %s", tc.raw, tc.width, got, err, tc.wantCode)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("scaledImage(%q, %d) = %q, %v; want %q", tc.raw, tc.width, got, err, tc.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	long := "Doors open an hour before the show; no re-entry. Bring your ticket on your phone, and arrive early: the queue at the door is long on Fridays and Saturdays."
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"short stays", "A night of jazz.", 140, "A night of jazz."},
		{"cut at a word", "one two three four", 12, "one two…"},
		{"accents count as one", "ção ção ção", 7, "ção…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(tc.in, tc.max); got != tc.want {
				t.Errorf("summary(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
	if got := summary(long, summaryLength); utf8.RuneCountInString(got) > summaryLength || got[len(got)-len("…"):] != "…" {
		t.Errorf("summary(long) = %q (%d characters), want at most %d ending in an ellipsis", got, utf8.RuneCountInString(got), summaryLength)
	}
}
