package problem

import (
	"errors"
	"testing"

	"boxoffice.dev/platform/textrule"
)

// TestCheckText checks what the checks add to textrule (which tests the rule itself): an
// Invalid problem naming the field, worded as the rule broken.
func TestCheckText(t *testing.T) {
	tests := []struct {
		name, in string
		check    func(field, s string) error
		want     string // "" = accepted
	}{
		{"CheckText accepts an id", "evt-001", CheckText, ""},
		{"CheckText refuses a tab", "a\tb", CheckText, textrule.Strict},
		{"CheckFreeText accepts a tab", "a\tb", CheckFreeText, ""},
		{"CheckFreeText refuses NUL", "a\x00b", CheckFreeText, textrule.Free},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check("title", tt.in)
			if tt.want == "" {
				if err != nil {
					t.Errorf("check(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			if pe, ok := errors.AsType[*Error](err); !ok || pe.Code != Invalid || pe.Field != "title" || pe.Message != tt.want {
				t.Errorf("check(%q) = %v, want an invalid problem naming title: %s", tt.in, err, tt.want)
			}
		})
	}
}
