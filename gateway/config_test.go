package gateway

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryConfigurationMistakeInOneRun checks that Run reports every invalid variable, the
// gateway's and the platform's, and a policy it cannot load, in one error before it starts.
func TestEveryConfigurationMistakeInOneRun(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(bad, []byte("routes: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(t.TempDir(), "policy.yaml") // parses, but two routes match alike
	if err := os.WriteFile(twice, []byte(`services:
  - {name: svc, instances: ["http://127.0.0.1:1"]}
routes:
  - {id: a, match: {method: GET, path: /v1/a}, service: svc, auth: none}
  - {id: b, match: {method: GET, path: /v1/a}, service: svc, auth: none}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	split := filepath.Join(t.TempDir(), "policy.yaml") // a global limit split between eu and us
	if err := os.WriteFile(split, []byte(`services:
  - {name: svc, instances: ["http://127.0.0.1:1"]}
routes:
  - {id: a, match: {method: GET, path: /v1/a}, service: svc, auth: none, limits: [everyone]}
limits:
  - {id: everyone, key: global, rate: 10/1m, global: {mode: static, shares: {eu: 70, us: 30}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"the gateway's and the platform's", map[string]string{"RATELIMIT_TIMEOUT": "abc", "SHUTDOWN_TIMEOUT": "xyz"},
			[]string{`RATELIMIT_TIMEOUT="abc"`, `SHUTDOWN_TIMEOUT="xyz"`}},
		{"a policy that does not load", map[string]string{"POLICY_FILE": bad, "SHUTDOWN_TIMEOUT": "xyz", "TOKEN_LEEWAY": "soon"},
			[]string{"POLICY_FILE=", `SHUTDOWN_TIMEOUT="xyz"`, `TOKEN_LEEWAY="soon"`}},
		{"a policy that parses but does not build", map[string]string{"POLICY_FILE": twice, "SHUTDOWN_TIMEOUT": "xyz"},
			[]string{"POLICY_FILE=", "routes[b].match", `SHUTDOWN_TIMEOUT="xyz"`}},
		{"an instance with a password", map[string]string{"UPSTREAM_CATALOG": "http://ops:s3cret@127.0.0.1:8102"},
			[]string{`UPSTREAM_CATALOG="http://(hidden)@127.0.0.1:8102"`}},
		{"trusted proxies and upstream instances", map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,proxy.local", "UPSTREAM_CATALOG": "http://127.0.0.1:1,ftp://catalog", "SHUTDOWN_TIMEOUT": "xyz"},
			[]string{`TRUSTED_PROXIES="10.0.0.0/8,proxy.local"`, `UPSTREAM_CATALOG="http://127.0.0.1:1,ftp://catalog"`, `SHUTDOWN_TIMEOUT="xyz"`}},
		{"a region without its home", map[string]string{"REGION": "us"}, []string{`HOME_REGION="": want`}},
		{"a region outside the home without the home's Redis", map[string]string{"REGION": "us", "HOME_REGION": "eu"},
			[]string{`HOME_REDIS_URL="": want the Redis of the home region eu`}},
		{"the home's Redis in the home region", map[string]string{"REGION": "eu", "HOME_REGION": "eu", "HOME_REDIS_URL": "redis://ops:s3cret@127.0.0.1:6379/0"},
			[]string{`HOME_REDIS_URL="(hidden)": want unset in the home region`}},
		{"a home without a region", map[string]string{"HOME_REGION": "eu"}, []string{`REGION="": want this gateway's region`}},
		{"region names", map[string]string{"REGION": "EU/west", "HOME_REGION": "eu_1", "HOME_REDIS_URL": "redis://127.0.0.1:1/0", "REGION_REBALANCE": "often"},
			[]string{`REGION="EU/west"`, `HOME_REGION="eu_1"`, `REGION_REBALANCE="often"`}},
		{"a policy without a share for the region", map[string]string{"POLICY_FILE": split, "REGION": "ap", "HOME_REGION": "eu", "HOME_REDIS_URL": "redis://127.0.0.1:1/0"},
			[]string{"POLICY_FILE=", `limits[everyone].global.shares: no share for region "ap"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"DATA_DIR": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			err := Run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard, io.Discard)
			if err == nil {
				t.Fatalf("Run(%v) = nil, want a configuration error", tt.env)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run(%v) = %v, want it to name %s", tt.env, err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Run(%v) = %v, want no password in it", tt.env, err)
			}
		})
	}
}
