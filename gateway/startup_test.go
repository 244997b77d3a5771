package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/testkit"
)

// TestStartsWithRedisDown starts the gateway while its REDIS_URL is down: it serves, the
// fail-open search limits through the local fallback and the fail-closed login answers 503;
// once Redis is up on that URL, decisions are Redis's.
func TestStartsWithRedisDown(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	rd.Stop()
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL()})

	if res := gw.call(t, "GET", "/v1/search", ""); res.status != http.StatusOK {
		t.Errorf("fail-open search with Redis down since start = %d %s, want 200", res.status, res.body)
	}
	login := func() response {
		return gw.call(t, "POST", "/v1/auth/login", `{"email":"ana@example.org","password":"x"}`)
	}
	if res := login(); res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" {
		t.Errorf("fail-closed login with Redis down since start = %d, Retry-After %q; want 503 with Retry-After",
			res.status, res.header.Get("Retry-After"))
	}
	if got := decisions(t, gw, "search"); got["fallback"] != 1 || len(got) != 1 {
		t.Errorf("search decisions by path with Redis down = %v, want 1 by the fallback", got)
	}

	rd.Start()
	testkit.Eventually(t, 10*time.Second, "login decided on Redis once it is up", func() bool { return login().status == http.StatusOK })
	if res := gw.call(t, "GET", "/v1/search", ""); res.status != http.StatusOK {
		t.Errorf("search with Redis up = %d %s, want 200", res.status, res.body)
	}
	if got := decisions(t, gw, "search"); got["store"] != 1 {
		t.Errorf("search decisions by path once Redis is up = %v, want 1 by the store", got)
	}
}

// decisions counts the access log's limit decisions on route by path (store, fallback, …).
func decisions(t *testing.T, p *process, route string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, l := range p.accessLog(t) {
		if l["route"] == route {
			if d, ok := l["decision"].(string); ok {
				out[d]++
			}
		}
	}
	return out
}

// TestStartsWithAuthDown starts the gateway while the auth service's JWKS cannot be fetched:
// a user's token is answered 503 with Retry-After (not 401, which would log the user out);
// once the JWKS answers, the token is accepted, and a token by a kid not in it is 401.
func TestStartsWithAuthDown(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	ks := newKeySet(t, "k1")
	var down atomic.Bool
	down.Store(true)
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		ks.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(auth.Close)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": auth.URL})
	bearer := "Bearer " + ks.sign(t, "k1", "usr_1", time.Now(), time.Hour)

	res := gw.call(t, "GET", "/v1/me", "", "Authorization", bearer)
	if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" ||
		!strings.HasPrefix(res.header.Get("Content-Type"), "application/problem+json") {
		t.Errorf("GET /v1/me with the JWKS down since start = %d, Retry-After %q, %s; want 503 problem+json with Retry-After",
			res.status, res.header.Get("Retry-After"), res.header.Get("Content-Type"))
	}

	down.Store(false)
	testkit.Eventually(t, 5*time.Second, "the token accepted once the JWKS answers", func() bool {
		return gw.call(t, "GET", "/v1/me", "", "Authorization", bearer).status == http.StatusOK
	})
	// A second key set signs with a kid the gateway's never publishes.
	forged := "Bearer " + newKeySet(t, "unpublished").sign(t, "unpublished", "usr_2", time.Now(), time.Hour)
	if res := gw.call(t, "GET", "/v1/me", "", "Authorization", forged); res.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/me with a kid the fetched JWKS lacks = %d %s, want 401", res.status, res.body)
	}
}

// TestScriptsLoadedAtStart checks that the gateway loads the limiter's scripts before its
// first request: a first decision that had to dial, meet NOSCRIPT and compile within
// RATELIMIT_TIMEOUT could miss it on a busy machine, and a fail-closed route would answer 503.
func TestScriptsLoadedAtStart(t *testing.T) {
	rd := testkit.StartRedis(t)
	startGateway(t, testPolicy, newBackend(t), map[string]string{"REDIS_URL": rd.URL()})
	info, err := rd.Client().Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	var cached int
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "number_of_cached_scripts:"); ok {
			cached, _ = strconv.Atoi(v)
		}
	}
	if want := 1<<len(ratelimit.Algorithms) - 1; cached < want {
		t.Errorf("scripts cached in Redis before any request = %d, want at least %d, one per set of algorithms", cached, want)
	}
}
