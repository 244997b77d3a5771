package scenario

import (
	"context"
	"strings"
	"testing"
)

// TestKnobBounds checks the values a numeric knob takes: finite numbers from Min (0 unless
// set) to Max (the kind's ceiling unless set), so no value floods the system with load or
// parks a backend for days.
func TestKnobBounds(t *testing.T) {
	float := KnobSpec{Name: "noisy_rate", Kind: "float"}
	count := KnobSpec{Name: "burst", Kind: "int"}
	limit := KnobSpec{Name: "rate", Kind: "int", Min: "1", Max: "1000"}
	wait := KnobSpec{Name: "service_time", Kind: "duration"}
	short := KnobSpec{Name: "service_time", Kind: "duration", Max: "5s"}
	tests := []struct {
		name string
		k    KnobSpec
		v    string
		ok   bool
	}{
		{"float zero", float, "0", true},
		{"float fraction", float, "0.5", true},
		{"float at the ceiling", float, "10000", true},
		{"float above the ceiling", float, "1e9", false},
		{"float Inf", float, "Inf", false},
		{"float -Inf", float, "-Inf", false},
		{"float NaN", float, "NaN", false},
		{"float negative", float, "-1", false},
		{"int zero", count, "0", true},
		{"int at the ceiling", count, "100000", true},
		{"int above the ceiling", count, "100001", false},
		{"int negative", count, "-1", false},
		{"int at min", limit, "1", true},
		{"int below min", limit, "0", false},
		{"int at max", limit, "1000", true},
		{"int above max", limit, "1001", false},
		{"int not a number", limit, "lots", false},
		{"duration zero", wait, "0s", true},
		{"duration at the ceiling", wait, "1m", true},
		{"duration of years", wait, "87600h", false},
		{"duration negative", wait, "-1s", false},
		{"duration at max", short, "5s", true},
		{"duration above max", short, "6s", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.k.check(tt.v)
			if (err == nil) != tt.ok {
				t.Errorf("%s.check(%q) = %v, want ok %v", tt.k.Name, tt.v, err, tt.ok)
			}
		})
	}
}

// TestKnobBoundsThemselves checks Min and Max as a scenario writes them: in the knob's kind,
// from 0 to the kind's ceiling, Min no more than Max, and only on numeric knobs.
func TestKnobBoundsThemselves(t *testing.T) {
	tests := []struct {
		name string
		k    KnobSpec
		want string // "" for bounds that are fine
	}{
		{"none", KnobSpec{Kind: "int"}, ""},
		{"narrowed", KnobSpec{Kind: "float", Min: "0.5", Max: "100"}, ""},
		{"duration", KnobSpec{Kind: "duration", Min: "10ms", Max: "5s"}, ""},
		{"negative min", KnobSpec{Kind: "int", Min: "-1"}, "want 0 <= min"},
		{"max above the ceiling", KnobSpec{Kind: "duration", Max: "2m"}, "max <= 1m"},
		{"float max above the ceiling", KnobSpec{Kind: "float", Max: "1e6"}, "max <= 10000"},
		{"infinite max", KnobSpec{Kind: "float", Max: "Inf"}, "max:"},
		{"min above max", KnobSpec{Kind: "int", Min: "10", Max: "5"}, "min <= max"},
		{"max of another kind", KnobSpec{Kind: "int", Max: "5s"}, "max:"},
		{"on an enum", KnobSpec{Kind: "enum", Options: []string{"a"}, Max: "3"}, "only int, float and duration"},
		{"on a bool", KnobSpec{Kind: "bool", Min: "0"}, "only int, float and duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tt.k.bounds()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("bounds(%+v) = %v, want nil", tt.k, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("bounds(%+v) = %v, want an error containing %q", tt.k, err, tt.want)
			}
		})
	}
}

const noisyScenario = `
name: noisy
title: Noisy
driver: request
request: {method: GET, path: /v1/events, route: events}
streams:
  - {name: clients, identity: ip, count: 2}
  - {name: noisy, identity: ip, count: 1, rate_knob: noisy_rate}
knobs:
  - {name: noisy_rate, kind: float, max: "1000", default: "0"}
  - {name: retries, kind: int, default: "3"}
profiles:
  - name: p
    phases:
      - {name: a, duration: 3s, rate: 0}
`

// A running scenario refuses a knob value out of range and keeps the value it had: an
// infinite rate is not a rate, and a negative count is not a count.
func TestSetKnobRefusesValuesOutOfRange(t *testing.T) {
	run := startOnFake(t, noisyScenario, newFakeSystem(), Options{})
	tests := []struct{ knob, v string }{
		{"noisy_rate", "Inf"},
		{"noisy_rate", "NaN"},
		{"noisy_rate", "1e9"},
		{"noisy_rate", "1001"},
		{"noisy_rate", "-5"},
		{"retries", "-1"},
	}
	for _, tt := range tests {
		t.Run(tt.knob+"="+tt.v, func(t *testing.T) {
			before := run.Knobs()[tt.knob]
			if err := run.SetKnob(context.Background(), tt.knob, tt.v); err == nil {
				t.Errorf("SetKnob(%s, %s) = nil, want an error", tt.knob, tt.v)
			}
			if got := run.Knobs()[tt.knob]; got != before {
				t.Errorf("after SetKnob(%s, %s) refused: Knobs()[%s] = %s, want %s as before", tt.knob, tt.v, tt.knob, got, before)
			}
		})
	}
	if err := run.SetKnob(context.Background(), "noisy_rate", "1000"); err != nil {
		t.Errorf("SetKnob(noisy_rate, 1000) = %v, want nil: 1000 is the knob's max", err)
	}
}
