package policy

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestCompileBoundsNameTheField: numbers the rate limiter cannot compute exactly are refused
// in the file and in an admin edit alike, naming the field that holds them.
func TestCompileBoundsNameTheField(t *testing.T) {
	tests := []struct {
		name      string
		old, new  string
		wantField string
	}{
		{"burst past 2^53", "burst: 5}", "burst: 9007199254740993}", "burst"},
		{"a slow bucket's burst past its span", "rate: 5/1m, burst: 5}", "rate: 1/1h, burst: 1250999}", "burst"},
		{"cost past the bound", "burst: 5}", "burst: 5, cost: 1125899906842625}", "cost"},
		{"limit past the bound", "rate: 5/1m", "rate: 1125899906842625/1m", "rate"},
		{"window past the bound", "rate: 5/1m", "rate: 5/26064d", "rate"},
		{"days that wrap around a duration", "rate: 5/1m", "rate: 5/213504d", "rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := compileChanged(t, tt.old, tt.new)
			want := "limits[holds-per-account]." + tt.wantField
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != want {
				t.Errorf("Compile() = %v, want an error naming %s", err, want)
			}
			// The same limit through the admin API's path.
			lim := p.Limits[0]
			err = newLive(t, base).Check(LimitEdit(lim))
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != tt.wantField {
				t.Errorf("Check(%+v) = %v, want an error naming %s", lim, err, tt.wantField)
			}
		})
	}
}

// TestCheckTenantRule: a table row is checked, field by field, before it is stored, rather
// than skipped by every replica that loads it.
func TestCheckTenantRule(t *testing.T) {
	s := mustCompile(t, base)
	tests := []struct {
		name      string
		rule      TenantRule
		wantField string
	}{
		{"valid", TenantRule{Tenant: "ten_a", Route: "holds", Capacity: 50, RefillPerSecond: 1}, ""},
		{"capacity of the audit", TenantRule{Tenant: "ten_a", Route: AllRoutes, Capacity: math.MaxInt64, RefillPerSecond: 1}, "capacity"},
		{"capacity past a slow refill's span", TenantRule{Tenant: "ten_a", Route: AllRoutes, Capacity: 1250999, RefillPerSecond: 1.0 / 3600}, "capacity"},
		{"no capacity", TenantRule{Tenant: "ten_a", Route: AllRoutes, RefillPerSecond: 1}, "capacity"},
		{"no refill", TenantRule{Tenant: "ten_a", Route: AllRoutes, Capacity: 5}, "refill_per_second"},
		{"unknown route", TenantRule{Tenant: "ten_a", Route: "nope", Capacity: 5, RefillPerSecond: 1}, "route"},
		{"no tenant", TenantRule{Route: AllRoutes, Capacity: 5, RefillPerSecond: 1}, "tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CheckTenantRule(tt.rule)
			fe, ok := errors.AsType[*FieldError](err)
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("CheckTenantRule(%+v) = %v, want nil", tt.rule, err)
			case tt.wantField != "" && (!ok || fe.Field != tt.wantField):
				t.Errorf("CheckTenantRule(%+v) = %v, want an error naming %s", tt.rule, err, tt.wantField)
			}
			// Compile agrees: it skips exactly the rows the check refuses.
			p, _ := Parse([]byte(base))
			c, err := Compile(p, []TenantRule{tt.rule})
			if err != nil {
				t.Fatal(err)
			}
			if skipped := len(c.Skipped) > 0; skipped != (tt.wantField != "") {
				t.Errorf("Compile skipped %v, want skipped %v", c.Skipped, tt.wantField != "")
			}
		})
	}
}

// compileChanged parses base with old replaced by new, which must change it, and compiles it.
func compileChanged(t *testing.T, old, new string) (*Policy, error) {
	t.Helper()
	doc := strings.Replace(base, old, new, 1)
	if doc == base {
		t.Fatalf("case does not change the policy: %q not found", old)
	}
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	_, err = Compile(p, nil)
	return p, err
}
