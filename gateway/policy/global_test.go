package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

// TestCompileGlobal: a limit's global reaches its rule as the rate limiter's Global, mode
// and shares, and keeps its names through JSON, as the admin API reads and writes a limit.
func TestCompileGlobal(t *testing.T) {
	tests := []struct {
		name        string
		global      string // added to holds-per-account
		mode        ratelimit.GlobalMode
		shares      map[string]int
		wantJSONHas string
	}{
		{"none", "", "", nil, ""},
		{"home", ", global: {mode: home}", ratelimit.GlobalHome, nil, `"global":{"mode":"home"}`},
		{"static", ", global: {mode: static, shares: {eu: 70, us-east-1: 30}}", ratelimit.GlobalStatic,
			map[string]int{"eu": 70, "us-east-1": 30}, `"global":{"mode":"static","shares":{"eu":70,"us-east-1":30}}`},
		{"demand", ", global: {mode: demand, shares: {eu: 50, us: 50}}", ratelimit.GlobalDemand,
			map[string]int{"eu": 50, "us": 50}, `"global":{"mode":"demand","shares":{"eu":50,"us":50}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, strings.Replace(base, "burst: 5}", "burst: 5"+tt.global+"}", 1))
			l := s.Limit("holds-per-account")
			g := l.Rule.Global
			switch {
			case tt.mode == "" && g != nil:
				t.Errorf("rule global = %+v, want nil", g)
			case tt.mode != "" && (g == nil || g.Mode != tt.mode || !equalShares(g.Shares, tt.shares)):
				t.Errorf("rule global = %+v, want mode %s, shares %v", g, tt.mode, tt.shares)
			}
			b, err := json.Marshal(l.Limit)
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), `"global"`); tt.wantJSONHas == "" && has || !strings.Contains(string(b), tt.wantJSONHas) {
				t.Errorf("json.Marshal(holds-per-account) = %s, want %q in it (no global when unset)", b, tt.wantJSONHas)
			}
		})
	}
}

func equalShares(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCompileApproximateGlobal: an approximate global limit with its sync compiles; the
// limits a region could not keep are refused in TestCompileNamesTheField.
func TestCompileApproximateGlobal(t *testing.T) {
	s := mustCompile(t, strings.Replace(base, "algorithm: gcra, rate: 10/1m,", "algorithm: fixed_window, rate: 10/1m, sync: 100ms, global: {mode: approximate},", 1))
	if r := s.Limit("login-per-ip").Rule; r.Global == nil || r.Global.Mode != ratelimit.GlobalApproximate || r.Sync != 100*time.Millisecond {
		t.Errorf("approximate global rule = %+v, want mode approximate and a 100ms sync", r)
	}
}

// TestCheckRegion: a gateway's region must have a share of every static and demand limit;
// home and approximate limits need none.
func TestCheckRegion(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(base, "burst: 5}", "burst: 5, global: {mode: static, shares: {eu: 70, us: 30}}}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, region := range []string{"eu", "us"} {
		if err := p.CheckRegion(region); err != nil {
			t.Errorf("CheckRegion(%s) = %v, want nil", region, err)
		}
	}
	var fe *FieldError
	if err := p.CheckRegion("ap"); !errors.As(err, &fe) || fe.Field != "limits[holds-per-account].global.shares" || !strings.Contains(err.Error(), `"ap"`) {
		t.Errorf("CheckRegion(ap) = %v, want an error naming limits[holds-per-account].global.shares and ap", err)
	}
	p.Limits[0].Global = &Global{Mode: "home"}
	if err := p.CheckRegion("ap"); err != nil {
		t.Errorf("CheckRegion(ap) of a home limit = %v, want nil", err)
	}
}
