package gateway

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/netdelay"
	"boxoffice.dev/platform/testkit"
)

// regionPolicy has one route whose one limit, keyed global, is ten an hour across the
// regions, decided as GLOBAL says. An hour's bucket refills one token every 6 minutes:
// nothing while a test runs.
const regionPolicy = `
services:
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: tickets, match: {method: GET, path: /v1/tickets}, service: echo, auth: none, limits: [everyone]}
limits:
  - {id: everyone, key: global, rate: 10/1h, global: GLOBAL}
`

// regionRTT is the round trip the link between the regions adds.
const regionRTT = 20 * time.Millisecond

// twoRegionGateways runs a gateway in eu, the home region, and one in us, each on its own
// redis-server, the us one reaching eu's Redis through a link that adds regionRTT.
func twoRegionGateways(t *testing.T, global string, env ...string) (eu, us *process, link *netdelay.Link) {
	t.Helper()
	euRedis, usRedis := testkit.StartRedis(t), testkit.StartRedis(t)
	link, err := netdelay.Listen(euRedis.Addr(), regionRTT)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	be := newBackend(t)
	doc := strings.Replace(regionPolicy, "GLOBAL", global, 1)
	euEnv := map[string]string{"REDIS_URL": euRedis.URL(), "REGION": "eu", "HOME_REGION": "eu"}
	usEnv := map[string]string{"REDIS_URL": usRedis.URL(), "REGION": "us", "HOME_REGION": "eu",
		"HOME_REDIS_URL": "redis://" + link.Addr() + "/0",
		// The 250ms default is room for a real link; the race detector on a loaded machine
		// can take longer, and a decision past the bound goes to the fallback, inexact.
		"HOME_LIMITER_TIMEOUT": "2s"}
	for i := 0; i+1 < len(env); i += 2 { // name, value pairs for both
		euEnv[env[i]], usEnv[env[i]] = env[i+1], env[i+1]
	}
	return startGateway(t, doc, be, euEnv), startGateway(t, doc, be, usEnv), link
}

// passed sends n requests to each gateway, taking turns, and counts each one's 200s; any
// answer but 200 or a 429 of the limit everyone fails the test.
func passed(t *testing.T, n int, gws ...*process) []int {
	t.Helper()
	ok := make([]int, len(gws))
	for range n {
		for i, p := range gws {
			res := p.call(t, "GET", "/v1/tickets", "")
			switch policy := res.header.Get("RateLimit-Policy"); {
			case res.status == http.StatusOK:
				ok[i]++
			case res.status != http.StatusTooManyRequests || !strings.HasPrefix(policy, `"everyone"`):
				t.Fatalf("GET /v1/tickets = %d, policy %q; want 200 or a 429 of everyone", res.status, policy)
			}
		}
	}
	return ok
}

// TestGlobalLimitAcrossTwoRegions runs a limit of ten an hour, keyed global, through a
// gateway in eu (home) and one in us, 20 ms apart. Decided at home, the two together pass
// exactly ten, every us decision a trip across the link. Split statically 70/30, each
// passes its share and us never crosses the link. Split by demand, the split follows the
// region that asks, rebalanced as REGION_REBALANCE says. A home store down at start holds no
// gateway back. Without REGION, the same limit is an ordinary one: ten in the one Redis.
func TestGlobalLimitAcrossTwoRegions(t *testing.T) {
	const limit, sent = 10, 12 // per gateway: more than either may pass

	t.Run("home", func(t *testing.T) {
		eu, us, link := twoRegionGateways(t, "{mode: home}")
		before := link.Trips()
		got := passed(t, sent, eu, us)
		if got[0] != limit/2 || got[1] != limit/2 {
			t.Errorf("200s, taking turns: eu %d, us %d; want %d each, %d together: one count, in eu's Redis", got[0], got[1], limit/2, limit)
		}
		if trips := link.Trips() - before; trips < limit/2 {
			t.Errorf("%d trips across the link, want one at least for each of the %d us requests allowed", trips, limit/2)
		}
	})

	t.Run("static", func(t *testing.T) {
		eu, us, link := twoRegionGateways(t, "{mode: static, shares: {eu: 70, us: 30}}")
		// The us gateway's home chain announces its replica in eu's Redis every few seconds
		// (ratelimit.Replicas), the link's only traffic when nothing is decided there:
		// right after one, a few seconds of requests cross the link only if a decision does.
		announced := link.Trips()
		testkit.Eventually(t, 10*time.Second, "the us replica's next announcement in the home Redis", func() bool {
			return link.Trips() > announced
		})
		before := link.Trips()
		got := passed(t, sent, eu, us)
		if trips := link.Trips() - before; trips != 0 {
			t.Errorf("%d trips across the link, want none: each region decides its share in its own Redis", trips)
		}
		if got[0] != 7 || got[1] != 3 {
			t.Errorf("200s: eu %d, us %d; want 7 and 3, the 70/30 split of %d", got[0], got[1], limit)
		}
		// A split that leaves us out would fail every us request: the us gateway refuses it.
		patch := `{"global":{"shares":{"eu":100,"us":null}}}` // a merge patch: null drops us
		if code, body := us.adminCall(t, "PATCH", "/admin/limits/everyone", patch); code != http.StatusBadRequest || !strings.Contains(body, `"field":"limits[everyone].global.shares"`) {
			t.Errorf("us: PATCH %s = %d %s, want 400 naming limits[everyone].global.shares", patch, code, body)
		}
		if code, body := eu.adminCall(t, "PATCH", "/admin/limits/everyone", patch); code != http.StatusOK {
			t.Errorf("eu: PATCH %s = %d %s, want 200: eu has its share", patch, code, body)
		}
	})

	t.Run("demand", func(t *testing.T) {
		_, us, _ := twoRegionGateways(t, "{mode: demand, shares: {eu: 50, us: 50}}", "REGION_REBALANCE", "100ms")
		// Only us asks: rebalanced every 100ms, its share goes from 50 % to all but eu's floor.
		want := 1 - ratelimit.MinDemandShare
		testkit.Eventually(t, 20*time.Second, fmt.Sprintf("us's share of everyone, rebalanced by demand, at %.2f", want), func() bool {
			passed(t, 1, us)
			share, ok := regionShare(t, us, "everyone")
			return ok && math.Abs(share-want) < 1e-9
		})
	})

	t.Run("home store down at start", func(t *testing.T) {
		home, here := testkit.StartRedis(t), testkit.StartRedis(t)
		home.Stop()
		doc := strings.Replace(regionPolicy, "GLOBAL", "{mode: home}", 1)
		us := startGateway(t, doc, newBackend(t), map[string]string{"REDIS_URL": here.URL(), "REGION": "us", "HOME_REGION": "eu",
			"HOME_REDIS_URL": home.URL(), "HOME_LIMITER_TIMEOUT": "2s",
			// Withdrawing the replica from a Redis that refuses connections takes the
			// client's dial retries and a 1s ZREM: more than the harness's 2s stop.
			"SHUTDOWN_TIMEOUT": "5s"})
		// Started, and a global limit it cannot ask about is decided by the fallback, open.
		if res := us.call(t, "GET", "/v1/tickets", ""); res.status != http.StatusOK {
			t.Fatalf("GET /v1/tickets with the home store down = %d %s, want 200 from the fallback", res.status, res.body)
		}
		logs := us.accessLog(t)
		if last := logs[len(logs)-1]; last["decision"] != "fallback" {
			t.Errorf("access log decision = %v, want fallback", last["decision"])
		}
	})

	t.Run("one region", func(t *testing.T) {
		rd := testkit.StartRedis(t)
		doc := strings.Replace(regionPolicy, "GLOBAL", "{mode: static, shares: {eu: 70, us: 30}}", 1)
		be := newBackend(t)
		env := map[string]string{"REDIS_URL": rd.URL()}
		if got := passed(t, sent, startGateway(t, doc, be, env), startGateway(t, doc, be, env)); got[0]+got[1] != limit {
			t.Errorf("200s of two replicas without REGION: %d and %d, together %d; want %d, the whole limit", got[0], got[1], got[0]+got[1], limit)
		}
	})
}

// regionShare reads ratelimit_region_share{rule} from p's /metrics.
func regionShare(t *testing.T, p *process, rule string) (float64, bool) {
	t.Helper()
	for _, line := range strings.Split(p.metrics(t), "\n") {
		if strings.HasPrefix(line, "ratelimit_region_share{") && strings.Contains(line, `rule="`+rule+`"`) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return v, err == nil
		}
	}
	return 0, false
}
