package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

func TestLocalIPLimit(t *testing.T) {
	tests := []struct {
		name     string
		settings string
		want     ratelimit.Rule
		on       bool
	}{
		{"unset: the default", "", ratelimit.Rule{ID: LocalIPRuleID, Algorithm: ratelimit.TokenBucket, Limit: 1000, Window: time.Second, Burst: 2000}, true},
		{"set", "settings: {local_ip_limit: {rate: 50/s, burst: 10}}\n", ratelimit.Rule{ID: LocalIPRuleID, Algorithm: ratelimit.TokenBucket, Limit: 50, Window: time.Second, Burst: 10}, true},
		{"no burst: the limit", "settings: {local_ip_limit: {rate: 600/1m}}\n", ratelimit.Rule{ID: LocalIPRuleID, Algorithm: ratelimit.TokenBucket, Limit: 600, Window: time.Minute}, true},
		{"off", "settings: {local_ip_limit: off}\n", ratelimit.Rule{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.settings+base)
			got, on := s.LocalIPLimit()
			if got != tt.want || on != tt.on {
				t.Errorf("LocalIPLimit() = %+v, %v, want %+v, %v", got, on, tt.want, tt.on)
			}
		})
	}
}

func TestLocalIPLimitRefused(t *testing.T) {
	tests := []struct {
		name, settings, field string
	}{
		{"not a rate", "{local_ip_limit: {rate: fast}}", "settings.local_ip_limit.rate"},
		{"no rate", "{local_ip_limit: {burst: 10}}", "settings.local_ip_limit.rate"},
		{"negative burst", "{local_ip_limit: {rate: 10/s, burst: -1}}", "settings.local_ip_limit.burst"},
		{"faster than the limiter counts", "{local_ip_limit: {rate: 2000000/s}}", "settings.local_ip_limit.rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte("settings: " + tt.settings + "\n" + base))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			_, err = Compile(p, nil)
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != tt.field {
				t.Errorf("Compile(%s) = %v, want an error naming %s", tt.settings, err, tt.field)
			}
		})
	}
	// A word other than off is a parse error that says what is wanted.
	if _, err := Parse([]byte("settings: {local_ip_limit: maybe}\n" + base)); err == nil || !strings.Contains(err.Error(), `want "off"`) {
		t.Errorf(`Parse(local_ip_limit: maybe) = %v, want an error asking for "off" or a mapping`, err)
	}
	// The rule's id is the policy's: no limit may take it.
	p, err := Parse([]byte(strings.ReplaceAll(base, "holds-per-account", LocalIPRuleID)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(p, nil); err == nil || !strings.Contains(err.Error(), "limits["+LocalIPRuleID+"].id") {
		t.Errorf("Compile(limit %s) = %v, want the id refused as reserved", LocalIPRuleID, err)
	}
}

// The setting changes with the policy, as every other does.
func TestLocalIPLimitReloads(t *testing.T) {
	l := newLive(t, base)
	if _, on := l.Current().LocalIPLimit(); !on {
		t.Fatalf("LocalIPLimit() off before the change, want the default")
	}
	if err := l.ReplaceFileData([]byte("settings: {local_ip_limit: off}\n" + base)); err != nil {
		t.Fatal(err)
	}
	if r, on := l.Current().LocalIPLimit(); on {
		t.Errorf("LocalIPLimit() after the file turned it off = %+v, want off", r)
	}
	if err := l.ReplaceFileData([]byte("settings: {local_ip_limit: {rate: 7/s}}\n" + base)); err != nil {
		t.Fatal(err)
	}
	if r, on := l.Current().LocalIPLimit(); !on || r.Limit != 7 {
		t.Errorf("LocalIPLimit() after the file set 7/s = %+v, %v, want 7/s", r, on)
	}
}
