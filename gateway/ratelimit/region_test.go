package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/netdelay"
	"boxoffice.dev/platform/testkit"
)

// world is two regions on one machine, eu (home) and us, each with its own redis-server and
// two replicas, us reaching eu's store through a link that adds a round trip. Every replica
// is the chain's store layers (Approximate over Redis) on one fake clock.
type world struct {
	link     *netdelay.Link
	replicas map[string][]*Regional
	syncs    []*Approximate // every replica's, local and home, to sync by hand
}

const linkRTT = 20 * time.Millisecond

func twoRegions(t *testing.T, now *time.Time) *world {
	t.Helper()
	c := clock.Func(func() time.Time { return *now })
	eu, us := testkit.StartRedis(t), testkit.StartRedis(t)
	link, err := netdelay.Listen(eu.Addr(), linkRTT)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	w := &world{link: link, replicas: map[string][]*Regional{}}
	approx := func(client redis.UniversalClient) *Approximate {
		store := NewRedis(client)
		store.now = c.Now
		a, err := NewApproximate(store, client, ApproximateOptions{Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		w.syncs = append(w.syncs, a)
		return a
	}
	for i := range 2 {
		home := eu.Client()
		g, err := NewRegional(approx(home), RegionalOptions{Region: "eu", Replica: fmt.Sprint(i), Store: home, Rebalance: time.Second, Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		w.replicas["eu"] = append(w.replicas["eu"], g)

		// A cut link fails a call at once: the demand tables' expiry runs on Redis's real
		// clock, which a test that waited out dial retries would outrun.
		far := redis.NewClient(&redis.Options{Addr: link.Addr(), MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
		t.Cleanup(func() { _ = far.Close() })
		// The client's first pipeline sets its connection up: those trips are not counted.
		warm := func(p redis.Pipeliner) error { return p.Ping(context.Background()).Err() }
		if _, err := far.Pipelined(context.Background(), warm); err != nil {
			t.Fatal(err)
		}
		g, err = NewRegional(approx(us.Client()), RegionalOptions{Region: "us", Replica: fmt.Sprint(i), Home: approx(far), Store: far, Rebalance: time.Second, Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		w.replicas["us"] = append(w.replicas["us"], g)
	}
	return w
}

// window is what one second of traffic got through, per region, and the slowest decision.
type window struct {
	allowed map[string]int
	trips   int64
	slowest map[string]time.Duration
	// failedRebalances counts the rebalances that could not reach the home store.
	failedRebalances int
}

func (w window) total() int { return w.allowed["eu"] + w.allowed["us"] }

// second sends perStep requests to every replica of each region, ten steps of 100 ms, syncing
// every approximate replica after each step, and rebalancing demand at the end.
func (w *world) second(t *testing.T, now *time.Time, rule Rule, perStep map[string]int) window {
	t.Helper()
	ctx := context.Background()
	trips := w.link.Trips()
	out := window{allowed: map[string]int{}, slowest: map[string]time.Duration{}}
	for range 10 {
		for _, region := range []string{"eu", "us"} {
			for _, g := range w.replicas[region] {
				for range perStep[region] {
					start := time.Now()
					res, err := g.Allow(ctx, []Request{{Rule: rule, Key: "global"}})
					if err != nil {
						t.Fatal(err)
					}
					out.slowest[region] = max(out.slowest[region], time.Since(start))
					if res.Allowed {
						out.allowed[region]++
					}
				}
			}
		}
		*now = now.Add(100 * time.Millisecond)
		for _, a := range w.syncs {
			if err := a.SyncNow(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, region := range []string{"eu", "us"} {
		for _, g := range w.replicas[region] {
			if err := g.Rebalance(ctx); err != nil {
				out.failedRebalances++
			}
		}
	}
	out.trips = w.link.Trips() - trips
	return out
}

// TestGlobalModesKeepOneLimitAcrossTwoRegions runs one demand pattern — us busy, eu nearly
// idle — through the four modes of a global limit of 100 a second, with a 20 ms round trip
// between the regions, and checks each against its promise: home exact and slow for us,
// static free of round trips but wasting eu's idle share, demand closer to the limit after a
// rebalance, approximate over by no more than its bound.
func TestGlobalModesKeepOneLimitAcrossTwoRegions(t *testing.T) {
	const limit = 100
	demand := map[string]int{"eu": 1, "us": 12} // per replica per 100 ms: eu 20/s, us 240/s
	rule := func(mode GlobalMode) Rule {
		r := Rule{ID: "global-" + string(mode), Algorithm: FixedWindow, Limit: limit, Window: time.Second,
			Global: &Global{Mode: mode, Shares: map[string]int{"eu": 70, "us": 30}}}
		if mode == GlobalApproximate {
			r.Sync = 100 * time.Millisecond
		}
		return r
	}
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) // windows aligned on the second

	t.Run("home", func(t *testing.T) {
		now := start
		w := twoRegions(t, &now)
		got := w.second(t, &now, rule(GlobalHome), demand)
		if got.total() != limit {
			t.Errorf("allowed %d (eu %d, us %d), want exactly %d: one store decides", got.total(), got.allowed["eu"], got.allowed["us"], limit)
		}
		if us := int64(2 * 10 * demand["us"]); got.trips < us {
			t.Errorf("%d trips across the link, want at least one per us request (%d)", got.trips, us)
		}
		if got.slowest["us"] < linkRTT {
			t.Errorf("slowest us decision %v, want at least the %v round trip", got.slowest["us"], linkRTT)
		}
	})

	var static window
	t.Run("static", func(t *testing.T) {
		now := start
		w := twoRegions(t, &now)
		static = w.second(t, &now, rule(GlobalStatic), demand)
		if static.allowed["eu"] != 20 || static.allowed["us"] != 30 {
			t.Errorf("allowed eu %d, us %d; want eu all its 20 and us its 30 %% share, 30", static.allowed["eu"], static.allowed["us"])
		}
		if static.trips != 0 {
			t.Errorf("%d trips across the link, want none", static.trips)
		}
	})

	t.Run("demand", func(t *testing.T) {
		now := start
		w := twoRegions(t, &now)
		// A second's demand is reported at its end, read a second later once every replica
		// has reported it, and applied from the second after: three on the static split.
		for i := range 3 {
			if got := w.second(t, &now, rule(GlobalDemand), demand); got.total() != static.total() {
				t.Errorf("second %d allowed %d, want the static split's %d before demand is known", i+1, got.total(), static.total())
			}
		}
		got := w.second(t, &now, rule(GlobalDemand), demand)
		// eu asked 20 of 260: its share is 5 % + 90 % × 20/260 = 11.9 %, us the other 88.1 %.
		if got.allowed["eu"] != 11 || got.allowed["us"] != 88 {
			t.Errorf("allowed eu %d, us %d after a rebalance, want 11 and 88", got.allowed["eu"], got.allowed["us"])
		}
		if got.total() > limit || got.total() <= static.total() {
			t.Errorf("allowed %d, want more than static's %d and at most %d", got.total(), static.total(), limit)
		}
		if got.trips != 2 { // each us replica's one rebalance; eu's stays at home
			t.Errorf("%d trips across the link in a second, want 2 (one rebalance per us replica)", got.trips)
		}
		if got.slowest["us"] >= linkRTT {
			t.Errorf("slowest us decision %v, want under the %v round trip: demand is decided at home", got.slowest["us"], linkRTT)
		}
		// The peak moves to eu: the split follows three seconds later, and no second in
		// between passes more than the limit, since every region switches at once.
		var last window
		for i := range 4 {
			last = w.second(t, &now, rule(GlobalDemand), map[string]int{"eu": 12, "us": 1})
			if last.total() > limit {
				t.Errorf("second %d of eu's peak allowed %d, want at most %d", i+1, last.total(), limit)
			}
		}
		if last.allowed["eu"] != 88 || last.allowed["us"] != 11 {
			t.Errorf("allowed eu %d, us %d once the split follows eu's peak, want 88 and 11", last.allowed["eu"], last.allowed["us"])
		}
		if last.failedRebalances != 0 {
			t.Errorf("%d rebalances failed with the link up", last.failedRebalances)
		}
	})

	// The link is cut while us holds most of the split: us cannot report or read, so it
	// keeps its last share, 88; eu, seeing no report from us, gives it only the floor and
	// takes 95. Both busy, the world passes 183: the stated bound, the limit plus us's share
	// minus the floor, and no more.
	t.Run("demand, link cut", func(t *testing.T) {
		now := start
		w := twoRegions(t, &now)
		for range 4 {
			w.second(t, &now, rule(GlobalDemand), demand)
		}
		if err := w.link.Close(); err != nil {
			t.Fatal(err)
		}
		var last window
		for range 4 {
			last = w.second(t, &now, rule(GlobalDemand), map[string]int{"eu": 12, "us": 12})
		}
		if last.allowed["us"] != 88 || last.allowed["eu"] != 95 || last.failedRebalances != 2 {
			t.Errorf("cut off: allowed eu %d, us %d with %d failed rebalances; want 95, 88 and us's 2",
				last.allowed["eu"], last.allowed["us"], last.failedRebalances)
		}
		if bound := limit + 88 - int(MinDemandShare*limit); last.total() > bound {
			t.Errorf("cut off: allowed %d, want at most %d", last.total(), bound)
		}
	})

	t.Run("approximate", func(t *testing.T) {
		now := start
		w := twoRegions(t, &now)
		got := w.second(t, &now, rule(GlobalApproximate), demand)
		// Four replicas, each blind between syncs to what the three others admit: at most
		// limit + 3 × (the most one replica admits in 100 ms, 12).
		if bound := limit + 3*demand["us"]; got.total() < limit || got.total() > bound {
			t.Errorf("allowed %d, want %d to %d", got.total(), limit, bound)
		}
		if got.trips != 20 { // each us replica's ten syncs, one pipeline each
			t.Errorf("%d trips across the link, want 20 (ten syncs per us replica)", got.trips)
		}
	})
}

func TestGlobalRuleValidation(t *testing.T) {
	base := Rule{ID: "g", Algorithm: FixedWindow, Limit: 10, Window: time.Second}
	for _, c := range []struct {
		field string
		edit  func(r *Rule)
	}{
		{"global.mode", func(r *Rule) { r.Global = &Global{Mode: "nearest"} }},
		{"global.shares", func(r *Rule) { r.Global = &Global{Mode: GlobalStatic} }},
		{"global.shares", func(r *Rule) { r.Global = &Global{Mode: GlobalDemand, Shares: map[string]int{"eu": 70, "us": 20}} }},
		{"global.shares", func(r *Rule) { r.Global = &Global{Mode: GlobalStatic, Shares: map[string]int{"eu": 0, "us": 100}} }},
		{"sync", func(r *Rule) { r.Global = &Global{Mode: GlobalApproximate} }},
		{"sync", func(r *Rule) { r.Sync = 100 * time.Millisecond; r.Global = &Global{Mode: GlobalHome} }},
		{"global", func(r *Rule) { r.Algorithm = Concurrency; r.Global = &Global{Mode: GlobalHome} }},
		{"global", func(r *Rule) { r.Shards = 2; r.Global = &Global{Mode: GlobalHome} }},
	} {
		r := base
		c.edit(&r)
		var re *RuleError
		if err := r.Validate(); !errors.As(err, &re) || re.Field != c.field {
			t.Errorf("%+v: Validate = %v, want a RuleError on %s", r.Global, err, c.field)
		}
	}
	ok := base
	ok.Global = &Global{Mode: GlobalStatic, Shares: map[string]int{"eu": 70, "us": 30}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a valid static split: %v", err)
	}
}

func TestDemandShare(t *testing.T) {
	rule := &Global{Mode: GlobalDemand, Shares: map[string]int{"eu": 60, "us": 30, "ap": 10}}
	// ap reported nothing: it keeps the floor. eu asked 20 of 200: 5 % + 85 % × 0.1. A region
	// the rule does not name and a field that is not a number count for nothing.
	table := map[string]string{"eu/0": "10", "eu/1": "10", "us/0": "180", "sa/0": "500", "us/1": "x"}
	if got := demandShare(table, "eu", rule); fmt.Sprintf("%.4f", got) != "0.1350" {
		t.Errorf("eu share = %.4f, want 0.1350", got)
	}
	if got := demandShare(table, "ap", rule); got != MinDemandShare {
		t.Errorf("idle region's share = %v, want the floor %v", got, MinDemandShare)
	}
	if got := demandShare(map[string]string{"eu/0": "0"}, "us", rule); got != 0.3 {
		t.Errorf("share without demand = %v, want the static 0.3", got)
	}
}

// TestRegionalAsksHomeOnlyWhenTheRegionAllows: a request with a regional rule and a global
// one is decided in its region first; a regional denial costs no trip to the home store,
// and the decisions come back in request order.
func TestRegionalAsksHomeOnlyWhenTheRegionAllows(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	w := twoRegions(t, &now)
	global := Rule{ID: "global", Algorithm: FixedWindow, Limit: 100, Window: time.Minute, Global: &Global{Mode: GlobalHome}}
	user := Rule{ID: "per-user", Algorithm: FixedWindow, Limit: 1, Window: time.Minute}
	us := w.replicas["us"][0]
	ask := func() Result {
		t.Helper()
		res, err := us.Allow(context.Background(), []Request{{Rule: global, Key: "global"}, {Rule: user, Key: "u1"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rules[0].Rule != "global" || res.Rules[1].Rule != "per-user" {
			t.Fatalf("decisions for %s, %s: want request order", res.Rules[0].Rule, res.Rules[1].Rule)
		}
		return res
	}
	before := w.link.Trips()
	if !ask().Allowed || w.link.Trips() == before {
		t.Fatal("first request: want allowed, decided across the link")
	}
	before = w.link.Trips()
	if res := ask(); res.Allowed || res.Rule != "per-user" || w.link.Trips() != before {
		t.Errorf("second request: allowed %v by %s with %d trips, want denied by per-user with none", res.Allowed, res.Rule, w.link.Trips()-before)
	}
}

// TestALateRebalanceAgreesOnTheShare: a replica whose rebalance comes an interval late
// still computes the next interval's share from the same table as one that came on time,
// so the two never hold different shares of one window.
func TestALateRebalanceAgreesOnTheShare(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	w := twoRegions(t, &now)
	rule := Rule{ID: "global", Algorithm: FixedWindow, Limit: 100, Window: time.Second,
		Global: &Global{Mode: GlobalDemand, Shares: map[string]int{"eu": 70, "us": 30}}}
	for range 3 {
		w.second(t, &now, rule, map[string]int{"eu": 1, "us": 12})
	}
	onTime, late := w.replicas["us"][0], w.replicas["us"][1]
	now = now.Add(500 * time.Millisecond) // mid-interval: only onTime rebalances here
	if err := onTime.Rebalance(context.Background()); err != nil {
		t.Fatal(err)
	}
	next := onTime.epoch(now) + 1
	now = now.Add(time.Second) // late rebalances in the interval onTime prepared for
	if err := late.Rebalance(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, b := onTime.shares[rule.ID].at(next), late.shares[rule.ID].at(next)
	if a != b || a < 0.8 {
		t.Errorf("shares for one interval: on time %.4f, late %.4f; want equal, us's large share", a, b)
	}
}

// TestRegionShareGauge: ratelimit_region_share reports the demand share in force.
func TestRegionShareGauge(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 500_000_000, time.UTC)
	srv := testkit.StartRedis(t)
	reader := sdkmetric.NewManualReader()
	c := clock.Func(func() time.Time { return now })
	g, err := NewRegional(NewMemory(c), RegionalOptions{Region: "eu", Store: srv.Client(), Rebalance: time.Second, Clock: c,
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	rule := Rule{ID: "global", Algorithm: FixedWindow, Limit: 100, Window: time.Second,
		Global: &Global{Mode: GlobalDemand, Shares: map[string]int{"eu": 70, "us": 30}}}
	if _, err := g.Allow(context.Background(), []Request{{Rule: rule, Key: "global"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if err := g.Rebalance(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if shares := gauges(rm, "ratelimit.region.share", "rule"); len(shares) != 1 || shares["global"] != 0.7 {
		t.Errorf("ratelimit.region.share = %v, want global at its static 0.7 before demand is known", shares)
	}
}

// TestDecisionsAtHomeAreCounted: the decisions a far region makes in the home store are in
// ratelimit_decisions_total, counted by Regional since the home chain reports none.
func TestDecisionsAtHomeAreCounted(t *testing.T) {
	srv := testkit.StartRedis(t)
	reader := sdkmetric.NewManualReader()
	c := clock.Func(func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) })
	g, err := NewRegional(NewMemory(c), RegionalOptions{Region: "us", Home: NewMemory(c), Store: srv.Client(), Clock: c,
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	rule := Rule{ID: "global", Algorithm: FixedWindow, Limit: 1, Window: time.Minute, Global: &Global{Mode: GlobalHome}}
	for range 3 {
		if _, err := g.Allow(context.Background(), []Request{{Rule: rule, Key: "global"}}); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	allowed := sum(rm, "ratelimit.decisions", attribute.String("rule", "global"), attribute.String("outcome", "allowed"))
	denied := sum(rm, "ratelimit.decisions", attribute.String("rule", "global"), attribute.String("outcome", "denied"))
	if allowed != 1 || denied != 2 {
		t.Errorf("ratelimit.decisions of global: allowed %d, denied %d; want 1 and 2", allowed, denied)
	}
}
