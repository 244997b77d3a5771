package gateway

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/auth/token"
)

// backend is an upstream instance that answers with what it received, as JSON.
type backend struct {
	*httptest.Server
	hits atomic.Int64
}

// seen is what the backend reports about a request.
type seen struct {
	Method      string            `json:"method"`
	Path        string            `json:"path"`
	Identity    identity.Identity `json:"identity"`
	Traceparent string            `json:"traceparent"`
	RequestID   string            `json:"request_id"`
	Body        string            `json:"body"`
	// Authorization is the header as it reached the upstream: "" once the gateway has
	// verified, and so consumed, a bearer token.
	Authorization string `json:"authorization"`
	// QueryCost is the cost header the gateway sent a BFF ("" when none).
	QueryCost string `json:"query_cost"`
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	return serveBackend(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if tokens := r.Header.Get("X-Test-Tokens"); tokens != "" {
			w.Header().Set("X-Boxoffice-Tokens", tokens) // as the assistant does
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(seen{Method: r.Method, Path: r.URL.Path, Identity: identity.FromRequest(r),
			Traceparent: r.Header.Get("Traceparent"), RequestID: r.Header.Get("X-Request-Id"), Body: string(body),
			Authorization: r.Header.Get("Authorization"), QueryCost: r.Header.Get(identity.HeaderQueryCost)})
	})
}

// keySet serves a JWKS of keys the test mints with auth's token package, as the auth
// service would.
type keySet struct {
	*httptest.Server
	mu   sync.Mutex
	keys map[string]ed25519.PrivateKey
}

func newKeySet(t testing.TB, kids ...string) *keySet {
	t.Helper()
	ks := &keySet{keys: map[string]ed25519.PrivateKey{}}
	for _, kid := range kids {
		ks.add(kid)
	}
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/jwks.json" {
			http.NotFound(w, r)
			return
		}
		ks.mu.Lock()
		defer ks.mu.Unlock()
		var set token.JWKS
		for kid, k := range ks.keys {
			set.Keys = append(set.Keys, token.PublicJWK(kid, k.Public().(ed25519.PublicKey)))
		}
		w.Header().Set("Cache-Control", "public, max-age=1") // rotations show within a second
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(ks.Close)
	return ks
}

func (ks *keySet) add(kid string) {
	_, k, _ := ed25519.GenerateKey(nil)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keys[kid] = k
}

func (ks *keySet) remove(kid string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	delete(ks.keys, kid)
}

// sign mints an access token for sub with kid's key, valid from issued for ttl.
func (ks *keySet) sign(t testing.TB, kid, sub string, issued time.Time, ttl time.Duration) string {
	t.Helper()
	ks.mu.Lock()
	k := ks.keys[kid]
	ks.mu.Unlock()
	s, err := token.Sign(k, kid, token.Claims{Subject: sub, Issuer: "boxoffice-auth", Audience: "boxoffice", ID: "jti-" + sub,
		IssuedAt: issued, NotBefore: issued, ExpiresAt: issued.Add(ttl)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// process is one gateway run in-process by startGateway.
type process struct {
	base, admin string
	policyFile  string
	logs        *testkit.Buffer
}

const adminToken = "test-admin-token"

// startGateway runs the gateway's Run on free ports with env (merged over the defaults
// below) and the policy doc, its "BACKEND" replaced by the backend's URL, in a watched file.
// It waits until the gateway is ready and every upstream instance routable, and stops it
// when the test ends, checking that Run returned nil.
func startGateway(t *testing.T, doc string, be *backend, env map[string]string) *process {
	t.Helper()
	dir := t.TempDir()
	p := &process{logs: &testkit.Buffer{}, policyFile: filepath.Join(dir, "policy.yaml")}
	if err := os.WriteFile(p.policyFile, []byte(strings.ReplaceAll(doc, "BACKEND", be.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	all := map[string]string{
		"HTTP_ADDR": httpAddr, "ADMIN_ADDR": adminAddr, "ADMIN_TOKEN": adminToken, "DATA_DIR": dir,
		"POLICY_FILE": p.policyFile, "SHUTDOWN_TIMEOUT": "2s", "TOKEN_LEEWAY": "1s",
		"AUTH_URL": "http://127.0.0.1:1", "AUTH_GRPC_ADDR": "127.0.0.1:1",
		// The 5ms production bound on a Redis decision is shorter than a scheduling hiccup
		// of a loaded test machine under the race detector; a decision that misses it is
		// taken by the fallback (or refused, for a fail-closed rule), which would make exact
		// expectations flaky. The fallback has tests of its own (TestRedisDown).
		"RATELIMIT_TIMEOUT": "250ms", "RATELIMIT_CLOSED_TIMEOUT": "250ms",
	}
	for k, v := range env {
		all[k] = v
	}
	p.base, p.admin = "http://"+httpAddr, "http://"+adminAddr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, nil, func(k string) string { return all[k] }, p.logs, io.Discard) }()
	t.Cleanup(func() {
		// A burst of requests leaves connections the client dialed but never used; the
		// server counts them as new, not idle, and its drain would wait for them.
		http.DefaultClient.CloseIdleConnections()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run() = %v, want nil after cancel", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("Run() did not return within 15s of cancel")
		}
	})
	testkit.Eventually(t, 20*time.Second, "gateway listening and ready, every upstream routable", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run() ended early: %v\n%s", err, p.logs)
		default:
		}
		// The admin API listens before the public listener does: a test that only waited for
		// it could send its first requests to a port nobody listens on yet.
		pub, err := http.Get(p.base + "/readyz")
		if err != nil {
			return false // not listening yet
		}
		pub.Body.Close()
		req, _ := http.NewRequest("GET", p.admin+"/admin/upstreams", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return pub.StatusCode == http.StatusOK && resp.StatusCode == http.StatusOK &&
			!strings.Contains(string(b), `"routable":false`) && strings.Contains(string(b), `"routable":true`)
	})
	return p
}

// response is a finished response with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) seen(t *testing.T) seen {
	t.Helper()
	var s seen
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return s
}

// call sends a request to the gateway's public listener; header pairs are name, value.
func (p *process) call(t *testing.T, method, path, body string, header ...string) response {
	t.Helper()
	return do(t, method, p.base+path, body, header...)
}

// metrics is the gateway's /metrics, served on its admin listener, not the public one.
func (p *process) metrics(t *testing.T) string {
	t.Helper()
	return string(do(t, "GET", p.admin+"/metrics", "").body)
}

// noRedirects shows a test the gateway's own answer: a redirect is followed by nobody.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, method, url, body string, header ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// adminCall sends a request with the admin token to the admin listener.
func (p *process) adminCall(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	r := do(t, method, p.admin+path, body, "Authorization", "Bearer "+adminToken)
	return r.status, string(r.body)
}

// accessLog returns the access log lines written so far.
func (p *process) accessLog(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(p.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "access" {
			out = append(out, line)
		}
	}
	return out
}

// testPolicy is the policy most end-to-end tests run: one backend behind routes of every
// auth mode and a handful of limits.
const testPolicy = `
services:
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: public, match: {method: GET, path: /v1/public}, service: echo, auth: none}
  - {id: optional, match: {method: GET, path: /v1/optional}, service: echo, auth: optional}
  - {id: me, match: {method: GET, path: /v1/me}, service: echo, auth: user}
  - {id: partner, match: {method: GET, path: /partner/v1/things}, service: echo, auth: apikey, strip_prefix: /partner}
  - {id: internal, match: {method: GET, path: /v1/admin/things}, service: echo, auth: apikey, plans: [internal]}
  - {id: holds, match: {method: POST, path: "/v1/events/{id}/holds"}, service: echo, auth: user, limits: [holds-per-account]}
  - {id: login, match: {method: POST, path: /v1/auth/login}, service: echo, auth: none, limits: [login-per-account]}
  - {id: search, match: {method: GET, path: /v1/search}, service: echo, auth: none, limits: [search-per-ip]}
  - {id: shadowed, match: {method: GET, path: /v1/shadowed}, service: echo, auth: none, limits: [shadow-per-ip]}
  - {id: burst, match: {method: GET, path: /v1/burst}, service: echo, auth: none, limits: [twenty]}
  - {id: ask, match: {method: POST, path: /v1/assistant/ask}, service: echo, auth: user, limits: [tokens]}
limits:
  - {id: holds-per-account, key: user, rate: 5/1m, burst: 5}
  - {id: login-per-account, key: "json:email", rate: 5/1m, on_store_failure: closed}
  - {id: search-per-ip, key: ip, rate: 3/1m, burst: 3}
  - {id: shadow-per-ip, key: ip, rate: 1/1m, mode: shadow}
  - {id: twenty, key: route, rate: 20/1h, burst: 20}
  - {id: tokens, key: user, algorithm: fixed_window, rate: 1000/1d, cost_header: X-Boxoffice-Tokens}
plans:
  free: {api: 60/1m}
  partner: {api: 10000/1m, quota: 1000000/30d}
  internal: unlimited
`
