package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"boxoffice.dev/gateway/ratelimit"
)

// TestCompileEnforcePercent: a limit's enforce_percent reaches its rule as a Partial mode
// below 100, leaves an enforced rule whole at 100 or unset, yields to mode shadow, and keeps
// its name and a 0 through JSON, as the admin API reads and writes a limit.
func TestCompileEnforcePercent(t *testing.T) {
	tests := []struct {
		name        string
		new         string // replaces "burst: 5}" in holds-per-account
		mode        ratelimit.Mode
		percent     int
		wantJSONHas string
	}{
		{"unset", "burst: 5}", ratelimit.Enforce, 0, ""},
		{"30 %", "burst: 5, enforce_percent: 30}", ratelimit.Partial, 30, `"enforce_percent":30`},
		{"none yet", "burst: 5, enforce_percent: 0}", ratelimit.Partial, 0, `"enforce_percent":0`},
		{"all", "burst: 5, enforce_percent: 100}", ratelimit.Enforce, 0, `"enforce_percent":100`},
		{"shadow pauses it", "burst: 5, mode: shadow, enforce_percent: 30}", ratelimit.Shadow, 0, `"enforce_percent":30`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(base, "burst: 5}", tt.new, 1)
			s := mustCompile(t, doc)
			r := s.Limit("holds-per-account").Rule
			if r.Mode != tt.mode || r.EnforcePercent != tt.percent {
				t.Errorf("rule mode, enforce percent = %s, %d; want %s, %d", r.Mode, r.EnforcePercent, tt.mode, tt.percent)
			}
			b, err := json.Marshal(s.Limit("holds-per-account").Limit)
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), "enforce_percent"); tt.wantJSONHas == "" && has || tt.wantJSONHas != "" && !strings.Contains(string(b), tt.wantJSONHas) {
				t.Errorf("json.Marshal(holds-per-account) = %s, want %q in it (none when unset)", b, tt.wantJSONHas)
			}
		})
	}
}

// TestEnforcePercentErrorReadsWell: the error names the field and the range.
func TestEnforcePercentErrorReadsWell(t *testing.T) {
	_, err := compileChanged(t, "burst: 5}", "burst: 5, enforce_percent: 130}")
	want := "limits[holds-per-account].enforce_percent: 130: want 0 to 100"
	if err == nil || err.Error() != want {
		t.Errorf("Compile(enforce_percent 130) = %v, want %q", err, want)
	}
}
