package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/platform/testkit"
)

// hotPolicy has one route per hot-key case, each limit keyed by the route alone so that
// every request spends the same key. The windows are an hour long: the gateway runs on the
// real clock, and a bucket refilling one token every 18s or more adds nothing a batch could
// take while a test runs.
const hotPolicy = `
services:
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: hot, match: {method: GET, path: /v1/hot}, service: echo, auth: none, limits: [hot-leased]}
  - {id: cold, match: {method: GET, path: /v1/cold}, service: echo, auth: none, limits: [cold]}
  - {id: spread, match: {method: GET, path: /v1/spread}, service: echo, auth: none, limits: [spread-sharded]}
  - {id: both, match: {method: GET, path: /v1/both}, service: echo, auth: none, limits: [both-leased-sharded]}
limits:
  - {id: hot-leased, key: route, algorithm: token_bucket, rate: 200/1h, lease: 10}
  - {id: cold, key: route, algorithm: token_bucket, rate: 1000/1h}
  - {id: spread-sharded, key: route, algorithm: token_bucket, rate: 100/1h, shards: 4}
  - {id: both-leased-sharded, key: route, algorithm: token_bucket, rate: 200/1h, shards: 4, lease: 10}
`

// TestLeasedLimitSavesRoundTrips runs two replicas on one Redis. A leased limit (200 an
// hour, batches of 10) costs one script call per 10 requests, the decisions taken on tokens
// in hand are logged with the lease path, and drained to the end it allows no more than
// limit + replicas × lease; a limit without a lease still costs one call per request.
func TestLeasedLimitSavesRoundTrips(t *testing.T) {
	const limit, lease, replicas = 200, 10, 2
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gws := []*process{startHot(t, be, rd), startHot(t, be, rd)}
	calls := newScriptCalls(t, rd.Client(), replicas)

	const n = 100
	for i := range n {
		if res := gws[i%2].call(t, "GET", "/v1/hot", ""); res.status != http.StatusOK {
			t.Fatalf("hot request %d = %d %s, want 200", i+1, res.status, res.body)
		}
	}
	// Each replica serves 50 requests: a batch of 10 every 10th.
	if got, slack := calls.since(t); got < n/lease || got > n/lease+slack {
		t.Errorf("%d requests on a limit leased in batches of %d: %d script calls, want %d (+ at most %d announcements)", n, lease, got, n/lease, slack)
	}
	for _, g := range gws {
		for range n / 2 {
			if res := g.call(t, "GET", "/v1/cold", ""); res.status != http.StatusOK {
				t.Fatalf("cold request = %d %s, want 200", res.status, res.body)
			}
		}
	}
	if got, slack := calls.since(t); got < n || got > n+slack {
		t.Errorf("%d requests on a limit without a lease: %d script calls, want %d (+ at most %d announcements)", n, got, n, slack)
	}
	paths := map[any]int{}
	for _, g := range gws {
		for _, l := range g.accessLog(t) {
			if l["route"] == "hot" {
				paths[l["decision"]]++
			}
		}
	}
	if paths["lease"] != n-n/lease || paths["store"] != n/lease {
		t.Errorf("hot requests by decision path = %v, want lease %d, store %d", paths, n-n/lease, n/lease)
	}

	// Drain: until each replica has refused, its hand empty and Redis short of a batch.
	allowed := n
	refused := [replicas]bool{}
	for i := 0; !(refused[0] && refused[1]); i++ {
		if i == 2*limit {
			t.Fatalf("%d more requests and still not refused by both replicas: %v", i, refused)
		}
		switch res := gws[i%2].call(t, "GET", "/v1/hot", ""); res.status {
		case http.StatusOK:
			allowed++
		case http.StatusTooManyRequests:
			refused[i%2] = true
		default:
			t.Fatalf("hot request = %d %s, want 200 or 429", res.status, res.body)
		}
	}
	// Over: tokens in hand carried into the next window. Under: a batch is taken whole, so
	// fewer than one batch may stay in Redis.
	if bound := limit + replicas*lease; allowed > bound || allowed <= limit-lease {
		t.Errorf("allowed %d on a leased limit of %d, want more than %d and at most %d (limit + replicas × lease)",
			allowed, limit, limit-lease, bound)
	}
}

// TestShardedLimitSpreadsKeys: a sharded limit keeps its state in one Redis key per shard,
// each its own hash tag, and never allows more than its limit; leased as well, its batches
// come from the shards and still cost one call per batch.
func TestShardedLimitSpreadsKeys(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startHot(t, be, rd)

	tests := []struct {
		name, path, rule string
		limit, lease     int
	}{
		{"sharded", "/v1/spread", "spread-sharded", 100, 0},
		{"sharded and leased", "/v1/both", "both-leased-sharded", 200, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := newScriptCalls(t, rd.Client(), 1)
			// Three requests per unit of budget: each of the four shards is picked at random
			// about 3/4 × limit times for a budget of limit/4, so every shard is drained (a
			// shard picked too rarely to drain is 6 standard deviations away).
			allowed := 0
			for i := range 3 * tt.limit {
				switch res := gw.call(t, "GET", tt.path, ""); res.status {
				case http.StatusOK:
					allowed++
				case http.StatusTooManyRequests:
				default:
					t.Fatalf("request %d = %d %s, want 200 or 429", i+1, res.status, res.body)
				}
				// The first quarter of the budget: however the batches fall on the shards,
				// none is drained yet, and each batch is one call.
				if i+1 == tt.limit/4 && tt.lease > 0 {
					want := tt.limit / 4 / tt.lease
					if got, slack := calls.since(t); got < want || got > want+slack {
						t.Errorf("%d requests in batches of %d: %d script calls, want %d (+ at most %d announcements)",
							i+1, tt.lease, got, want, slack)
					}
				}
			}
			if allowed != tt.limit {
				t.Errorf("allowed %d of %d requests on a limit of %d in four shards, want %d: never more, and every shard drained",
					allowed, 3*tt.limit, tt.limit, tt.limit)
			}
			keys := ruleKeys(t, rd.Client(), tt.rule)
			if len(keys) != 4 {
				t.Fatalf("Redis keys of %s = %q, want 4, one per shard", tt.rule, keys)
			}
			for i := range 4 {
				if want := "rl:{route:" + strings.TrimPrefix(tt.path, "/v1/") + "#" + strconv.Itoa(i) + "}:" + tt.rule; !slices.Contains(keys, want) {
					t.Errorf("Redis keys of %s = %q, want %s among them", tt.rule, keys, want)
				}
			}
		})
	}
}

// TestLeaseByTheAdminAPI: a lease switched on with PATCH /admin/limits/{id} takes effect
// on the next requests, and one the limit's algorithm cannot take is refused naming lease.
func TestLeaseByTheAdminAPI(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startHot(t, be, rd)
	if code, body := gw.adminCall(t, "PATCH", "/admin/limits/cold", `{"lease":10}`); code != http.StatusOK || !strings.Contains(body, `"lease":10`) {
		t.Fatalf("PATCH /admin/limits/cold {lease: 10} = %d %s, want 200 with the lease", code, body)
	}
	calls := newScriptCalls(t, rd.Client(), 1)
	for i := range 30 {
		if res := gw.call(t, "GET", "/v1/cold", ""); res.status != http.StatusOK {
			t.Fatalf("request %d = %d %s, want 200", i+1, res.status, res.body)
		}
	}
	if got, slack := calls.since(t); got < 3 || got > 3+slack {
		t.Errorf("30 requests after a lease of 10 by the admin API: %d script calls, want 3 (+ at most %d announcements)", got, slack)
	}
	if code, body := gw.adminCall(t, "PATCH", "/admin/limits/cold", `{"algorithm":"concurrency"}`); code != http.StatusBadRequest || !strings.Contains(body, `"field":"lease"`) {
		t.Errorf("PATCH a leased limit to concurrency = %d %s, want 400 naming lease", code, body)
	}
}

// startHot starts a gateway on hotPolicy and rd, and sends it one request so that its
// connection is up and the script loaded before anything is counted. The store timeout is
// raised as in TestTwoReplicasShareOneBucket: a call past it would be decided by the
// fallback, which these tests do not count on.
func startHot(t *testing.T, be *backend, rd *testkit.Redis) *process {
	t.Helper()
	gw := startGateway(t, hotPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "RATELIMIT_TIMEOUT": "1s"})
	if res := gw.call(t, "GET", "/v1/cold", ""); res.status != http.StatusOK {
		t.Fatalf("GET /v1/cold = %d %s, want 200", res.status, res.body)
	}
	return gw
}

// scriptCalls counts the script calls (EVALSHA, and EVAL after a NOSCRIPT) Redis has served,
// from its INFO commandstats. Each replica's announcement (Replicas.Run) is a script call
// too, made at start and then every 10s/3: since reports the calls since the last count
// with how many of them may be announcements.
type scriptCalls struct {
	client   *redis.Client
	replicas int
	last     int
	at       time.Time
}

func newScriptCalls(t *testing.T, c *redis.Client, replicas int) *scriptCalls {
	t.Helper()
	s := &scriptCalls{client: c, replicas: replicas}
	s.last, s.at = s.count(t), time.Now()
	return s
}

// since returns the script calls since the last count, and the most of them that could be
// replicas' announcements.
func (s *scriptCalls) since(t *testing.T) (calls, announcements int) {
	t.Helper()
	n, now := s.count(t), time.Now()
	calls, announcements = n-s.last, s.replicas*(int(now.Sub(s.at)/(3*time.Second))+1)
	s.last, s.at = n, now
	return calls, announcements
}

func (s *scriptCalls) count(t *testing.T) int {
	t.Helper()
	info, err := s.client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		// cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,...
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("INFO commandstats %q: %v", line, err)
		}
		total += n
	}
	return total
}

// ruleKeys lists the Redis keys holding a rule's state: rl:{<key>}:<rule>.
func ruleKeys(t *testing.T, c *redis.Client, rule string) []string {
	t.Helper()
	var keys []string
	iter := c.Scan(context.Background(), 0, "rl:*:"+rule, 100).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return keys
}

// TestHotKeysEndpointNamesTheHotKey runs two replicas on one Redis under a skewed load: half
// the requests carry one client id, the rest ids drawn from 10,000. GET /admin/hotkeys, on
// either replica, names that client first with about half of all decisions, both replicas'
// counts merged in Redis.
func TestHotKeysEndpointNamesTheHotKey(t *testing.T) {
	const policy = `
services:
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: api, match: {method: GET, path: /v1/api}, service: echo, auth: none, limits: [per-client]}
limits:
  - {id: per-client, key: "header:X-Client", algorithm: token_bucket, rate: 100000/1h}
`
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	env := map[string]string{"REDIS_URL": rd.URL(), "RATELIMIT_TIMEOUT": "1s"}
	gws := []*process{startGateway(t, policy, be, env), startGateway(t, policy, be, env)}
	const n = 2000
	for i := range n {
		client := "bot-7"
		if i%2 == 1 {
			client = "fan-" + strconv.Itoa((i*7919)%10_000)
		}
		if res := gws[i/2%2].call(t, "GET", "/v1/api", "", "X-Client", client); res.status != http.StatusOK {
			t.Fatalf("request %d = %d %s, want 200", i+1, res.status, res.body)
		}
	}
	type hotKeys struct {
		HotKeys []struct {
			Rule, Key string
			Decisions int64
			Share     float64
		} `json:"hot_keys"`
	}
	var got hotKeys
	testkit.Eventually(t, 15*time.Second, "both replicas publish their counts", func() bool {
		status, body := gws[0].adminCall(t, "GET", "/admin/hotkeys?limit=3", "")
		got = hotKeys{}
		if status != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || len(got.HotKeys) == 0 {
			return false
		}
		// Both published: the hot client's every decision is in, and the others' share too.
		return got.HotKeys[0].Decisions == n/2 && got.HotKeys[0].Share < 0.6
	})
	top := got.HotKeys[0]
	if top.Rule != "per-client" || !strings.HasPrefix(top.Key, "header:x-client:") || top.Share < 0.45 || top.Share > 0.55 {
		t.Errorf("GET /admin/hotkeys first = %+v; want the hot client's key of per-client with about half the decisions", top)
	}
	if len(got.HotKeys) != 3 || got.HotKeys[1].Share > 0.01 {
		t.Errorf("GET /admin/hotkeys?limit=3 = %+v; want 3 keys, the others each under 1%%", got.HotKeys)
	}
	if status, body := gws[1].adminCall(t, "GET", "/admin/hotkeys?limit=0", ""); status != http.StatusBadRequest || !strings.Contains(body, "limit") {
		t.Errorf("GET /admin/hotkeys?limit=0 = %d %s, want 400 naming limit", status, body)
	}
}
