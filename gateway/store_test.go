package gateway

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestRedisDown stops redis-server under a running gateway: the fail-closed login answers
// 503 with Retry-After (not 429: the client did nothing wrong), the fail-open search keeps
// limiting through the local fallback, and both are back on Redis once it returns.
func TestRedisDown(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL()})
	login := func() response {
		return gw.call(t, "POST", "/v1/auth/login", `{"email":"ana@example.org","password":"x"}`)
	}
	if res := login(); res.status != 200 {
		t.Fatalf("login with Redis up = %d %s, want 200", res.status, res.body)
	}

	rd.Stop()
	res := login()
	if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" || res.header.Get("RateLimit") != "" {
		t.Errorf("fail-closed login with Redis down = %d, Retry-After %q, RateLimit %q; want 503 with Retry-After and no budget fields",
			res.status, res.header.Get("Retry-After"), res.header.Get("RateLimit"))
	}
	if !strings.Contains(string(res.body), `"status":503`) {
		t.Errorf("503 body = %s, want a problem document", res.body)
	}
	// search-per-ip allows 3 a minute; alone (N = 1) the fallback allows the same.
	var codes []int
	for range 5 {
		codes = append(codes, gw.call(t, "GET", "/v1/search", "").status)
	}
	if want := []int{200, 200, 200, 429, 429}; !equalInts(codes, want) {
		t.Errorf("fail-open search with Redis down = %v, want %v", codes, want)
	}
	paths := map[string]int{}
	for _, l := range gw.accessLog(t) {
		if l["route"] == "search" {
			paths[l["decision"].(string)]++
		}
	}
	if paths["fallback"] != 5 {
		t.Errorf("search decisions by path = %v, want 5 by the fallback", paths)
	}

	rd.Start()
	testkit.Eventually(t, 10*time.Second, "login decided on Redis again", func() bool { return login().status == 200 })
	last := gw.accessLog(t)
	if l := last[len(last)-1]; l["decision"] != "store" {
		t.Errorf("decision after Redis returned = %v, want store", l["decision"])
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTwoReplicasShareOneBucket runs two gateways on one Redis and sends 200 concurrent
// requests, spread over both, at a 20-token bucket: exactly 20 pass.
//
// The limiter's store timeout is raised to 1s here: 200 requests at once on a small machine
// (under the race detector) can keep a Redis call past even the harness's 250ms, and such a
// call falls back to the local limit/N, which is approximate by design (TestRedisDown covers
// it). This test is about the shared store's atomicity, so it also checks every decision
// was the store's.
func TestTwoReplicasShareOneBucket(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	env := map[string]string{"REDIS_URL": rd.URL(), "RATELIMIT_TIMEOUT": "1s"}
	gws := []*process{startGateway(t, testPolicy, be, env), startGateway(t, testPolicy, be, env)}

	var allowed, denied, other atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 200 {
		wg.Go(func() {
			<-start
			switch gws[i%2].call(t, "GET", "/v1/burst", "").status {
			case http.StatusOK:
				allowed.Add(1)
			case http.StatusTooManyRequests:
				denied.Add(1)
			default:
				other.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if allowed.Load() != 20 || denied.Load() != 180 || other.Load() != 0 {
		t.Errorf("200 requests over two replicas at a 20-token bucket: %d allowed, %d denied, %d other; want 20, 180, 0",
			allowed.Load(), denied.Load(), other.Load())
	}
	for i, g := range gws {
		n := 0
		for _, l := range g.accessLog(t) {
			if l["route"] != "burst" {
				continue
			}
			n++
			// local_deny repeats a denial the store gave this replica earlier: still the
			// store's decision, without the round trip.
			if d := l["decision"]; d != "store" && d != "local_deny" {
				t.Errorf("replica %d decided by %v, want store or local_deny", i, d)
				break
			}
		}
		if n < 50 {
			t.Errorf("replica %d served %d of the requests, want about half", i, n)
		}
	}
}
