package pace

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name   string
		fields []string
		want   []Limit
		ok     bool
	}{
		{"absent", nil, nil, true},
		{"the gateway's two rules", []string{`"holds-per-account";r=0;t=12, "api-per-ip";r=195;t=1`},
			[]Limit{{"holds-per-account", 0, 12 * time.Second}, {"api-per-ip", 195, time.Second}}, true},
		{"tokens, other parameters, no spaces", []string{`day;r=5;t=3600;pk=:cGsx:;x=?1;y=1.5,hour;t=1;r=0`},
			[]Limit{{"day", 5, time.Hour}, {"hour", 0, time.Second}}, true},
		{"two field lines", []string{`"a";r=1;t=2`, `"b";r=3;t=4`},
			[]Limit{{"a", 1, 2 * time.Second}, {"b", 3, 4 * time.Second}}, true},
		{"an escaped quote in a name", []string{`"a\"b";r=1;t=1`}, []Limit{{`a"b`, 1, time.Second}}, true},
		{"no t", []string{`"a";r=1`}, nil, false},
		{"a negative r", []string{`"a";r=-1;t=1`}, nil, false},
		{"an absurd t", []string{`"a";r=1;t=999999999999999`}, nil, false},
		{"a decimal r", []string{`"a";r=1.5;t=1`}, nil, false},
		{"a string r", []string{`"a";r="1";t=1`}, nil, false},
		{"an unterminated name", []string{`"a;r=1;t=1`}, nil, false},
		{"a trailing comma", []string{`"a";r=1;t=1,`}, nil, false},
		{"an inner list", []string{`("a");r=1;t=1`}, nil, false},
		{"a number as the name", []string{`5;r=1;t=1`}, nil, false},
		{"an upper-case key", []string{`"a";R=1;t=1`}, nil, false},
		{"the old three-field form", []string{`100`}, nil, false},
		{"garbage", []string{"\x00\xff;;,,=="}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Ratelimit": tt.fields}
			got, ok := ParseLimits(h)
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseLimits(%q) = %v, %v, want %v, %v", tt.fields, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParsePolicies(t *testing.T) {
	tests := []struct {
		name  string
		field string
		want  []Policy
		ok    bool
	}{
		{"a rate and a concurrency limit", `"api-per-ip";q=200;w=2, "in-flight";q=10;qu="concurrent-requests"`,
			[]Policy{{"api-per-ip", 200, 2 * time.Second, ""}, {"in-flight", 10, 0, "concurrent-requests"}}, true},
		{"no q", `"a";w=1`, nil, false},
		{"a zero window", `"a";q=1;w=0`, nil, false},
		{"a decimal window", `"a";q=1;w=0.5`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParsePolicies(http.Header{"Ratelimit-Policy": {tt.field}})
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePolicies(%q) = %v, %v, want %v, %v", tt.field, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		field string
		want  time.Duration
		ok    bool
	}{
		{"", 0, false},
		{"12", 12 * time.Second, true},
		{" 0 ", 0, true},
		{"Sun, 01 Mar 2026 10:00:30 GMT", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 09:00:00 GMT", 0, true}, // in the past: now
		{"-1", 0, false},
		{"1.5", 0, false},
		{"99999999999999999999", 0, false},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		got, ok := RetryAfter(http.Header{"Retry-After": {tt.field}}, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%q) = %v, %v, want %v, %v", tt.field, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParse holds that no field value panics or is half-read: a value either parses whole
// or is refused.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`"a";r=1;t=2, b;r=3;t=4`, `"a";q=1;w=1;qu="x"`, `:ab:;r=1`, `"\`, `a;`, `?2`, `-`, `1.`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{"Ratelimit": {s}, "Ratelimit-Policy": {s}, "Retry-After": {s}}
		if ls, ok := ParseLimits(h); !ok && ls != nil {
			t.Errorf("ParseLimits(%q) refused it but returned %v", s, ls)
		}
		if ps, ok := ParsePolicies(h); !ok && ps != nil {
			t.Errorf("ParsePolicies(%q) refused it but returned %v", s, ps)
		}
		if d, ok := RetryAfter(h, time.Unix(0, 0)); d < 0 || !ok && d != 0 {
			t.Errorf("RetryAfter(%q) = %v, %v", s, d, ok)
		}
	})
}
