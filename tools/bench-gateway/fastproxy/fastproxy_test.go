package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/auth/token"
)

const (
	benchPath = "/v1/bench"
	benchBody = `{"id":"evt-bench"}`
	kid       = "test-1"
)

func TestJWT(t *testing.T) {
	rd := testkit.StartRedis(t)
	base, up, key := startEnforcing(t, rd, "1000000/s, burst: 1000000")
	rc := rd.Client()
	evalsha := func() int {
		t.Helper()
		info := rc.Info(context.Background(), "commandstats").Val()
		for line := range strings.Lines(info) {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}

	const valid = 5
	before := evalsha()
	for i := range valid {
		res, body := get(t, base+benchPath, http.Header{
			"Authorization":     {"Bearer " + sign(t, key, "bench-user")},
			identity.HeaderUser: {"forged-admin"},
			identity.HeaderPlan: {"internal"},
			"X-Forwarded-For":   {"6.6.6.6"},
		})
		if res.StatusCode != http.StatusOK || body != benchBody {
			t.Fatalf("request %d: GET = %d %q, want 200 %q", i, res.StatusCode, body, benchBody)
		}
		for name, want := range map[string]string{
			"Echo-User": "bench-user", "Echo-Plan": "", "Echo-Xff": "127.0.0.1", "Echo-Host": strings.TrimPrefix(up.URL, "http://"),
		} {
			if got := res.Header.Get(name); got != want {
				t.Errorf("upstream saw %s = %q, want %q", name, got, want)
			}
		}
		if tp := res.Header.Get("Echo-Traceparent"); len(tp) != 55 || !strings.Contains(tp, res.Header.Get("X-Request-Id")) {
			t.Errorf("traceparent %q and X-Request-Id %q do not match", tp, res.Header.Get("X-Request-Id"))
		}
		for name, want := range map[string]string{
			"RateLimit-Policy":  `"bench-per-user";q=1000000;w=1, "bench-per-ip";q=1000000;w=1`,
			"X-RateLimit-Limit": "1000000",
		} {
			if got := res.Header.Get(name); got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
		if got := res.Header.Get("RateLimit"); !strings.HasPrefix(got, `"bench-per-user";r=99999`) || !strings.Contains(got, `"bench-per-ip";r=99999`) {
			t.Errorf("RateLimit = %q, want both rules with r just under 1000000", got)
		}
	}
	if got := evalsha() - before; got != valid {
		t.Errorf("Redis ran EVALSHA %d times for %d requests, want %d", got, valid, valid)
	}
	for _, k := range []string{"rl:{user:bench-user}:bench-per-user", "rl:{ip:127.0.0.1}:bench-per-ip"} {
		if n := rc.Exists(context.Background(), k).Val(); n != 1 {
			t.Errorf("Redis key %s exists = %d, want 1", k, n)
		}
	}

	_, otherKey, _ := ed25519.GenerateKey(nil)
	for _, c := range []struct {
		name   string
		header http.Header
	}{
		{"no token", http.Header{}},
		{"garbage", http.Header{"Authorization": {"Bearer not.a.token"}}},
		{"other key", http.Header{"Authorization": {"Bearer " + sign(t, otherKey, "bench-user")}}},
		{"basic", http.Header{"Authorization": {"Basic YTpi"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := evalsha()
			res, _ := get(t, base+benchPath, c.header)
			if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("GET = %d with WWW-Authenticate %q, want 401 with a challenge", res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
			if got := evalsha() - before; got != 0 {
				t.Errorf("a refused request ran %d decisions, want 0", got)
			}
		})
	}
	if res, _ := get(t, base+"/v1/elsewhere", http.Header{}); res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/elsewhere = %d, want 404", res.StatusCode)
	}

	res, body := get(t, base+MetricsPath, nil)
	for _, want := range []string{`ratelimit_decisions_total{path="store"} 10`, `fastproxy_requests_total{outcome="forwarded"} 5`,
		`fastproxy_requests_total{outcome="unauthorized"} 4`, `fastproxy_requests_total{outcome="no_route"} 1`,
		`fastproxy_requests_total{outcome="limit_store_error"} 0`} {
		if res.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("metrics = %d %q, want it to contain %q", res.StatusCode, body, want)
		}
	}
}

func TestJWTDenies(t *testing.T) {
	base, _, key := startEnforcing(t, testkit.StartRedis(t), "2/m, burst: 2")
	h := http.Header{"Authorization": {"Bearer " + sign(t, key, "bench-user")}}
	for i, want := range []int{200, 200, 429} {
		res, _ := get(t, base+benchPath, h)
		if res.StatusCode != want {
			t.Errorf("request %d: GET = %d, want %d", i, res.StatusCode, want)
		}
		if want == 429 && !strings.HasPrefix(res.Header.Get("RateLimit"), `"bench-per-user";r=0;t=`) {
			t.Errorf("429 RateLimit = %q, want bench-per-user with r=0", res.Header.Get("RateLimit"))
		}
	}
}

func TestPlain(t *testing.T) {
	up := newUpstream(t, newKey(t))
	base := startProxy(t, "-plain", "-upstream", up.URL)
	res, body := get(t, base+benchPath, http.Header{identity.HeaderUser: {"as-sent"}})
	if res.StatusCode != http.StatusOK || body != benchBody {
		t.Fatalf("GET = %d %q, want 200 %q", res.StatusCode, body, benchBody)
	}
	for name, want := range map[string]string{"RateLimit": "", "Echo-User": "as-sent", "Echo-Traceparent": "", "Echo-Xff": "127.0.0.1"} {
		if got := res.Header.Get(name); got != want {
			t.Errorf("plain proxy: %s = %q, want %q", name, got, want)
		}
	}
}

// TestRefused checks what run refuses before it serves: flags that do not add up, and
// policies that need what this proxy does not do as the gateway would.
func TestRefused(t *testing.T) {
	policyWith := func(route, limit string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "policy.yaml")
		doc := "services:\n  - {name: bench, instances: [\"http://127.0.0.1:1\"]}\n" +
			"routes:\n  - {id: bench, match: {method: GET, path: /v1/bench}, service: bench, " + route + ", limits: [l]}\n" +
			"limits:\n  - {id: l, algorithm: token_bucket, rate: 10/s, burst: 10, " + limit + "}\n"
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	policyFlags := func(policyFile string) []string {
		return []string{"-upstream", "http://127.0.0.1:1", "-policy", policyFile, "-redis", "redis://127.0.0.1:1/0", "-jwks", "http://127.0.0.1:1/jwks"}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no upstream", []string{"-plain"}, `-upstream "": want an http:// base URL`},
		{"https upstream", []string{"-plain", "-upstream", "https://example.org"}, `want an http:// base URL`},
		{"plain with a policy", []string{"-plain", "-upstream", "http://127.0.0.1:1", "-policy", "p.yaml"}, "-plain does no policy work"},
		{"policy without redis", []string{"-upstream", "http://127.0.0.1:1", "-policy", "p.yaml", "-jwks", "http://x"}, "-policy, -redis and -jwks are all needed"},
		{"auth none", policyFlags(policyWith("auth: none", "key: ip")), "route bench: auth none: fastproxy takes only auth: user"},
		{"header key", policyFlags(policyWith("auth: user", "key: header:X-Client")), "limit l: key header: fastproxy keys by user, ip and route only"},
		{"cost header", policyFlags(policyWith("auth: user", "key: user, cost_header: X-Cost")), "limit l: fastproxy takes no concurrency, lease, shards or cost_header"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"fastproxy"}, c.args...), noEnv, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", c.args, err, c.want)
			}
		})
	}
}

func noEnv(string) string { return "" }

// newUpstream serves benchBody on benchPath, with what it was sent echoed in response
// headers, and the JWKS of key.
func newUpstream(t *testing.T, key ed25519.PrivateKey) *httptest.Server {
	t.Helper()
	jwks, err := json.Marshal(token.JWKS{Keys: []token.JWK{token.PublicJWK(kid, key.Public().(ed25519.PublicKey))}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+benchPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Echo-User", r.Header.Get(identity.HeaderUser))
		w.Header().Set("Echo-Plan", r.Header.Get(identity.HeaderPlan))
		w.Header().Set("Echo-Xff", r.Header.Get("X-Forwarded-For"))
		w.Header().Set("Echo-Host", r.Host)
		w.Header().Set("Echo-Traceparent", r.Header.Get("Traceparent"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, benchBody)
	})
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) { w.Write(jwks) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// startEnforcing starts an upstream and, in front of it, the proxy enforcing the bench's
// policy (see writePolicy) with rd as its Redis; it returns the proxy's base URL, the
// upstream and the key that signs valid tokens.
func startEnforcing(t *testing.T, rd *testkit.Redis, perUser string) (string, *httptest.Server, ed25519.PrivateKey) {
	t.Helper()
	key := newKey(t)
	up := newUpstream(t, key)
	base := startProxy(t, "-upstream", up.URL, "-policy", writePolicy(t, up.URL, perUser),
		"-redis", rd.URL(), "-jwks", up.URL+"/.well-known/jwks.json")
	return base, up, key
}

// writePolicy writes the bench's policy (tools/bench-gateway/policy-jwt.yaml.tmpl) for
// upstream, with perUser as the per-user bucket's rate and burst, and returns its path.
func writePolicy(t *testing.T, upstream, perUser string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	doc := `services:
  - {name: bench, instances: ["` + upstream + `"]}
routes:
  - {id: bench, match: {method: GET, path: /v1/bench}, service: bench, auth: user, limits: [bench-per-user, bench-per-ip]}
limits:
  - {id: bench-per-user, key: user, algorithm: token_bucket, rate: ` + perUser + `}
  - {id: bench-per-ip, key: ip, algorithm: gcra, rate: 1000000/s, burst: 1000000}
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProxy runs the proxy with args on a free port until the test ends, and returns its
// base URL once it answers.
func startProxy(t *testing.T, args ...string) string {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"fastproxy", "-addr", addr}, args...), noEnv, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fastproxy: %v", err)
		}
	})
	testkit.Eventually(t, 10*time.Second, "fastproxy listening", func() bool {
		res, err := http.Get("http://" + addr + MetricsPath)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return "http://" + addr
}

func get(t *testing.T, url string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func sign(t *testing.T, key ed25519.PrivateKey, subject string) string {
	t.Helper()
	now := time.Now()
	tok, err := token.Sign(key, kid, token.Claims{Subject: subject, Issuer: "boxoffice-auth", Audience: "boxoffice", ID: "t",
		IssuedAt: now, NotBefore: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
