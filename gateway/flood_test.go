package gateway

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// preLimitFloodPolicy pre-limits each address to bursts of 100 and 50 a second, in front of a route
// whose own limit, in Redis, never denies: every request that passes costs a Redis call.
const preLimitFloodPolicy = `
settings: {local_ip_limit: {rate: 50/s, burst: 100}}
services:
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: search, match: {method: GET, path: /v1/search}, service: echo, auth: none, limits: [wide-per-ip]}
limits:
  - {id: wide-per-ip, key: ip, rate: 100000/s, burst: 100000}
`

// TestFloodCutBeforeRedis floods the gateway from one address, through a trusted proxy, far
// beyond its pre-limit: the excess is answered 429 from memory and never reaches Redis,
// whose script calls stay within what the pre-limit allowed. Other addresses and loopback
// are served meanwhile, and the setting follows the policy file.
func TestFloodCutBeforeRedis(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, preLimitFloodPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "TRUSTED_PROXIES": "127.0.0.1/32"})
	if res := gw.call(t, "GET", "/v1/search", "", "X-Forwarded-For", "198.51.100.1"); res.status != http.StatusOK {
		t.Fatalf("first request = %d %s, want 200", res.status, res.body) // scripts loaded, connections up
	}

	const n, workers, flooder = 2000, 8, "203.0.113.50"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	t.Cleanup(client.CloseIdleConnections)
	scripts := newScriptCalls(t, rd.Client(), 1)
	var ok, tooMany, other atomic.Int64
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= n {
				req, _ := http.NewRequest("GET", gw.base+"/v1/search", nil)
				req.Header.Set("X-Forwarded-For", flooder)
				resp, err := client.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					tooMany.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	calls, announcements := scripts.since(t)

	// What a bucket of 100 refilled 50 a second allows over the flood, and a little more for
	// the time between the clock readings of the test and the gateway.
	allowance := 100 + int64(50*took.Seconds()) + 5
	passed := int(ok.Load())
	t.Logf("%d requests in %v: %d passed (allowance %d), %d refused, %d script calls in Redis", n, took, passed, allowance, tooMany.Load(), calls)
	if other.Load() != 0 || ok.Load()+tooMany.Load() != n {
		t.Fatalf("flood answers: %d 200, %d 429, %d other, want only 200 and 429", ok.Load(), tooMany.Load(), other.Load())
	}
	if ok.Load() < 100 || ok.Load() > allowance {
		t.Errorf("flood passed %d, want the burst of 100 and at most %d", ok.Load(), allowance)
	}
	// Each request that passed cost one decision in Redis, a refused one none; the rest are
	// the replica's announcements.
	if calls < passed || calls > passed+announcements {
		t.Errorf("Redis script calls during the flood = %d, want %d (one per request passed) and at most %d announcements", calls, passed, announcements)
	}

	// The excess was counted, on the limiter's decisions, as decided in memory.
	metrics := gw.metrics(t)
	if got := metricValue(metrics, `ratelimit_decisions_total{`, `outcome="denied"`, `path="memory"`, `rule="local-per-ip"`); got != tooMany.Load() {
		t.Errorf("ratelimit_decisions_total{rule=local-per-ip, outcome=denied, path=memory} = %d, want %d", got, tooMany.Load())
	}
	if got := metricValue(metrics, `ratelimit_decisions_total{`, `outcome="allowed"`, `path="store"`, `rule="wide-per-ip"`); got < ok.Load() {
		t.Errorf("ratelimit_decisions_total{rule=wide-per-ip, outcome=allowed, path=store} = %d, want at least %d beside the pre-limit's series", got, ok.Load())
	}

	// The pre-limit is per address: another one, and loopback, are served.
	if res := gw.call(t, "GET", "/v1/search", "", "X-Forwarded-For", "198.51.100.2"); res.status != http.StatusOK {
		t.Errorf("another address after the flood = %d, want 200", res.status)
	}
	if res := gw.call(t, "GET", "/v1/search", ""); res.status != http.StatusOK {
		t.Errorf("loopback after the flood = %d, want 200", res.status)
	}

	// The setting follows the policy file: at 1 a minute with a burst of 5, a fresh address
	// is refused at its sixth request.
	doc, err := os.ReadFile(gw.policyFile)
	if err != nil {
		t.Fatal(err)
	}
	tight := strings.Replace(string(doc), "{rate: 50/s, burst: 100}", "{rate: 1/1m, burst: 5}", 1)
	if err := os.WriteFile(gw.policyFile, []byte(tight), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := 0
	testkit.Eventually(t, 5*time.Second, "the tighter pre-limit applies", func() bool {
		fresh++
		from := fmt.Sprintf("192.0.2.%d", fresh)
		for range 5 {
			if res := gw.call(t, "GET", "/v1/search", "", "X-Forwarded-For", from); res.status != http.StatusOK {
				t.Fatalf("request within a burst of 5 from %s = %d, want 200", from, res.status)
			}
		}
		return gw.call(t, "GET", "/v1/search", "", "X-Forwarded-For", from).status == http.StatusTooManyRequests
	})
}

// metricValue is the value of the Prometheus series starting with name whose labels include
// every one of labels; 0 when there is none.
func metricValue(text, name string, labels ...string) int64 {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			return int64(f)
		}
	}
	return 0
}
