package waitroom

import (
	"testing"

	"boxoffice.dev/platform/problem"
)

func TestEstimateWait(t *testing.T) {
	tests := []struct {
		name     string
		position int64
		rate     int
		want     int64
		wantOK   bool
	}{
		{"next in line", 1, 50, 0, true},
		{"last of this second", 50, 50, 0, true},
		{"first of the next second", 51, 50, 1, true},
		{"far back", 1000, 50, 19, true},
		{"one a second", 10, 1, 9, true},
		{"not waiting", 0, 50, 0, true},
		{"paused", 10, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := EstimateWait(tt.position, tt.rate)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("EstimateWait(%d, %d) = %d, %v, want %d, %v", tt.position, tt.rate, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool // valid
	}{
		{"event id", ValidateEventID("id", "evt-flash"), true},
		{"event id with a brace", ValidateEventID("id", "evt}{x"), false},
		{"event id with a colon", ValidateEventID("id", "wr:x"), false},
		{"empty event id", ValidateEventID("id", ""), false},
		{"rate", ValidateRate("admit_per_second", 50), true},
		{"paused", ValidateRate("admit_per_second", 0), true},
		{"negative rate", ValidateRate("admit_per_second", -1), false},
		{"huge rate", ValidateRate("admit_per_second", MaxAdmitPerSecond+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if valid := tt.err == nil; valid != tt.want {
				t.Fatalf("valid = %v (%v), want %v", valid, tt.err, tt.want)
			}
			if tt.err != nil && problem.CodeOf(tt.err) != problem.Invalid {
				t.Errorf("error %v, want an invalid-field problem", tt.err)
			}
		})
	}
}
