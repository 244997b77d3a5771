package ratelimit

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/platform/clock"
)

// GlobalMode is how the regions of a deployment share one global limit.
type GlobalMode string

// The ways to decide a global limit; docs/lessons/distributed.md, "One limit, two regions",
// weighs them.
const (
	// GlobalHome decides every request in the home region's store: exact, and every region
	// but the home one pays the round trip to it on every request.
	GlobalHome GlobalMode = "home"
	// GlobalStatic gives each region a fixed share of the limit (Global.Shares), decided in
	// its own store: no round trip, and a share a region does not use is lost to the others.
	GlobalStatic GlobalMode = "static"
	// GlobalDemand splits the limit by the demand each region reports to the home store
	// every rebalance: no round trip per request, and the split lags demand by an interval.
	GlobalDemand GlobalMode = "demand"
	// GlobalApproximate counts in each replica and syncs with the home store every Rule.Sync
	// (Approximate): over by what the other replicas admit between syncs, the round trip
	// included.
	GlobalApproximate GlobalMode = "approximate"
)

// GlobalModes lists the modes in a stable order.
var GlobalModes = []GlobalMode{GlobalHome, GlobalStatic, GlobalDemand, GlobalApproximate}

// Global makes a rule one limit across every region of a deployment (Regional).
type Global struct {
	Mode GlobalMode
	// Shares are each region's percent of the limit, summing to 100: GlobalStatic's split,
	// and GlobalDemand's until its first rebalance. Other modes ignore them.
	Shares map[string]int
}

// MinDemandShare is the part of a GlobalDemand limit each region keeps whatever its demand,
// so that a region whose traffic comes back is served before the next rebalance.
const MinDemandShare = 0.05

// validateGlobal checks the rule's Global, naming the field as a policy spells it.
func (r Rule) validateGlobal() error {
	g := r.Global
	if g == nil {
		return nil
	}
	if !slices.Contains(GlobalModes, g.Mode) {
		return ruleErr(r, "global.mode", "%q: want one of home, static, demand, approximate", g.Mode)
	}
	switch {
	case r.Algorithm == Concurrency:
		return ruleErr(r, "global", "a concurrency limit holds slots in one store; want a rate or a quota")
	case r.Lease > 0 || r.Shards > 1 || r.Level != nil || r.MaxDelay > 0:
		return ruleErr(r, "global", "a global limit does not combine with lease, shards, parent or queue")
	case g.Mode == GlobalApproximate && r.Sync == 0:
		return ruleErr(r, "sync", "global mode approximate syncs with the home store: set sync, e.g. 100ms")
	case g.Mode != GlobalApproximate && r.Sync > 0:
		return ruleErr(r, "sync", "%v: only global mode approximate syncs", r.Sync)
	case (g.Mode == GlobalStatic || g.Mode == GlobalDemand) && len(g.Shares) == 0:
		return ruleErr(r, "global.shares", "global mode %s needs each region's percent to start from", g.Mode)
	}
	sum, bad := 0, ""
	for region, p := range g.Shares { // no sorting: Validate runs on every request
		if (p < 1 || p > 100 || region == "") && (bad == "" || region < bad) {
			bad = region
		}
		sum += p
	}
	switch {
	case bad != "" || g.Shares[""] != 0:
		return ruleErr(r, "global.shares", "%q: %d: want a named region and 1 to 100 percent", bad, g.Shares[bad])
	case len(g.Shares) > 0 && sum != 100:
		return ruleErr(r, "global.shares", "the percents add up to %d, want 100", sum)
	}
	return nil
}

// Regional decides the global rules (Rule.Global) of a gateway replica in one region, and
// passes the others to its region's limiter unchanged. Home and approximate rules go to the
// home store (across the link, unless this is the home region); static and demand rules
// become regional rules with this region's share of the limit.
//
// A request with global and regional rules is decided regionally first, then globally: one
// the global rule refuses has spent its regional budgets (two stores, no shared two-pass),
// which never lets more through. Rebalance, run every RebalanceEvery, splits by demand; see
// docs/lessons/distributed.md, "One limit, two regions".
type Regional struct {
	region string
	field  string // this replica's field in a demand table: region/replica
	local  Limiter
	home   Limiter               // nil in the home region: local is the home store's
	store  redis.UniversalClient // the home store, for the demand table
	now    func() time.Time
	every  time.Duration
	// decisions counts the decisions made at home, whose chain reports none: its series
	// would collide with this region's chain's. Nil: no metrics.
	decisions *decisionCounter

	mu      sync.Mutex
	demand  map[string]int64   // demand rule → units asked here since the last rebalance
	globals map[string]*Global // demand rule → its Global, as last seen
	shares  map[string]split   // demand rule → this region's share, once known
	since   time.Time          // the last rebalance
}

// RegionalOptions place a replica in its deployment.
type RegionalOptions struct {
	// Region is this replica's region, as Global.Shares names it.
	Region string
	// Replica names this replica in the demand tables; "" means random.
	Replica string
	// Home decides home and approximate rules in the home store: a Chain on the home
	// region's Redis, reached across the link; nil in the home region itself.
	Home Limiter
	// Store is the home region's Redis, where demand is reported (the local one in the home
	// region).
	Store redis.UniversalClient
	// Rebalance is how often demand shares are recomputed; 0 means 2s.
	Rebalance time.Duration
	// Clock is the time source; the zero Clock is time.Now.
	Clock clock.Clock
	// Meter receives ratelimit_region_share{rule}, this region's share of each demand rule
	// in force, and the decisions made in the home store in ratelimit_decisions_total; nil
	// means none.
	Meter metric.MeterProvider
}

// NewRegional wraps local, the limiter of o.Region.
func NewRegional(local Limiter, o RegionalOptions) (*Regional, error) {
	if o.Region == "" || strings.Contains(o.Region, "/") || o.Store == nil {
		return nil, fmt.Errorf("ratelimit: a regional limiter needs its region (without a /) and the home store")
	}
	if o.Replica == "" {
		o.Replica = rand.Text()[:12]
	}
	g := &Regional{region: o.Region, field: o.Region + "/" + o.Replica, local: local, home: o.Home, store: o.Store, now: o.Clock.Now,
		every: o.Rebalance, demand: map[string]int64{}, globals: map[string]*Global{}, shares: map[string]split{}}
	if g.every < time.Millisecond {
		g.every = 2 * time.Second
	}
	g.since = g.now()
	if o.Meter != nil {
		var err error
		if g.decisions, err = newDecisionCounter(o.Meter.Meter(meterName)); err != nil {
			return nil, fmt.Errorf("ratelimit metrics: %w", err)
		}
		_, err = o.Meter.Meter(meterName).Float64ObservableGauge("ratelimit.region.share",
			metric.WithDescription("This region's share of each global limit split by demand, in force now."),
			metric.WithFloat64Callback(func(_ context.Context, obs metric.Float64Observer) error {
				g.mu.Lock()
				defer g.mu.Unlock()
				epoch := g.epoch(g.now())
				for id, s := range g.shares {
					obs.Observe(s.at(epoch), metric.WithAttributes(attribute.String("rule", id)))
				}
				return nil
			}))
		if err != nil {
			return nil, fmt.Errorf("ratelimit metrics: %w", err)
		}
	}
	return g, nil
}

var _ Limiter = (*Regional)(nil)

// Allow decides reqs: regional rules and global rules made regional on the local limiter,
// then, if they allow, the global rules decided at home.
func (g *Regional) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	if !slices.ContainsFunc(reqs, func(q Request) bool { return q.Rule.Global != nil }) {
		return allowValid(ctx, g.local, reqs)
	}
	here := make([]Request, 0, len(reqs))
	var away []Request
	var at []int // where each of away sits in reqs
	for i, q := range reqs {
		if q.Rule.Global != nil {
			switch q.Rule.Global.Mode {
			case GlobalStatic, GlobalDemand:
				r, err := g.regional(q)
				if err != nil {
					return Result{}, err
				}
				q.Rule = r
			default:
				if g.home != nil {
					away, at = append(away, q), append(at, i)
					continue
				}
			}
		}
		here = append(here, q)
	}
	if len(away) == 0 {
		return allowValid(ctx, g.local, here)
	}
	res, err := allowValid(ctx, g.local, here)
	if err != nil {
		return Result{}, err
	}
	ds := make([]Decision, 0, len(reqs))
	ds = append(ds, res.Rules...)
	if !res.Allowed { // the global rules are reported, not asked: nothing spent at home
		for _, q := range away {
			d := verdict{allowed: true, remaining: int64(q.Rule.capacity())}.decision(q, PathStore)
			d.skipped = true
			ds = append(ds, d)
		}
	} else {
		far, err := allowValid(ctx, g.home, away)
		if err != nil {
			return Result{}, err
		}
		ds = append(ds, far.Rules...)
		if g.decisions != nil {
			for i, d := range far.Rules {
				g.decisions.add(ctx, outcomeKey{away[i].Rule.ID, outcomeOf(d), d.Path})
			}
		}
	}
	// Back into request order: here's decisions in order, with away's at their places.
	out := make([]Decision, len(reqs))
	h, a := 0, len(here)
	for i := range reqs {
		if len(at) > 0 && at[0] == i {
			out[i], at, a = ds[a], at[1:], a+1
		} else {
			out[i], h = ds[h], h+1
		}
	}
	return combine(out), nil
}

// Release gives slots back to the local limiter: concurrency limits are never global.
func (g *Regional) Release(ctx context.Context, leases ...Lease) error {
	return g.local.Release(ctx, leases...)
}

// regional is q's global rule with this region's share of its limit and burst; a demand
// rule's request is counted as demand.
func (g *Regional) regional(q Request) (Rule, error) {
	r := q.Rule
	share := float64(r.Global.Shares[g.region]) / 100
	if r.Global.Mode == GlobalDemand {
		g.mu.Lock()
		g.demand[r.ID] += q.cost()
		g.globals[r.ID] = r.Global
		if s, ok := g.shares[r.ID]; ok {
			share = s.at(g.epoch(g.now()))
		}
		g.mu.Unlock()
	}
	if share <= 0 {
		return Rule{}, ruleErr(r, "global.shares", "no share for region %q", g.region)
	}
	r.Limit = max(1, int(float64(r.Limit)*share))
	if r.Burst > 0 {
		r.Burst = max(1, int(float64(r.Burst)*share))
	}
	return r, nil
}

// demandKey is where the home store keeps the demand a rule met during one rebalance
// interval (epoch): units per second, one field per replica, "region/replica".
func demandKey(rule string, epoch int64) string {
	return "rl:{demand}:" + rule + ":" + strconv.FormatInt(epoch, 10)
}

// split is a region's demand share: cur until the interval (epoch) from, next since.
type split struct {
	cur, next float64
	from      int64
}

func (s split) at(epoch int64) float64 {
	if epoch >= s.from {
		return s.next
	}
	return s.cur
}

// epoch numbers the rebalance intervals since 1970, the same in every region.
func (g *Regional) epoch(t time.Time) int64 { return t.UnixMilli() / g.every.Milliseconds() }

// RebalanceEvery is how often Rebalance should run (RegionalOptions.Rebalance).
func (g *Regional) RebalanceEvery() time.Duration { return g.every }

// Rebalance reports this replica's demand since its last call as the previous interval's
// (epoch), and sets this region's share for the next interval from the demand of three
// before it, and for this one from four before. Each table is written during one interval
// and read only in the two after, so every replica, in every region, computes the share of
// an interval from the same table, even one whose rebalance came late: the shares add up to
// the limit in every window that divides the interval. One pipelined round trip for all
// demand rules; on error the shares stay and the demand is reported next time.
func (g *Regional) Rebalance(ctx context.Context) error {
	g.mu.Lock()
	now := g.now()
	elapsed := now.Sub(g.since).Seconds()
	seen, globals := g.demand, maps.Clone(g.globals)
	g.demand, g.since = map[string]int64{}, now
	g.mu.Unlock()
	if len(globals) == 0 || elapsed <= 0 {
		return nil
	}
	epoch := g.epoch(now)
	ids := slices.Sorted(maps.Keys(globals))
	pipe := g.store.Pipeline()
	next := make([]*redis.MapStringStringCmd, len(ids))
	cur := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		if n := seen[id]; n > 0 {
			pipe.HIncrByFloat(ctx, demandKey(id, epoch-1), g.field, float64(n)/elapsed)
			pipe.PExpire(ctx, demandKey(id, epoch-1), 4*g.every)
		}
		next[i] = pipe.HGetAll(ctx, demandKey(id, epoch-2))
		cur[i] = pipe.HGetAll(ctx, demandKey(id, epoch-3))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		g.mu.Lock()
		for id, n := range seen {
			g.demand[id] += n
		}
		g.mu.Unlock()
		return fmt.Errorf("rebalance demand: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, id := range ids {
		g.shares[id] = split{
			cur:  demandShare(cur[i].Val(), g.region, globals[id]),
			next: demandShare(next[i].Val(), g.region, globals[id]),
			from: epoch + 1,
		}
	}
	return nil
}

// demandShare is region's share of a rule from a demand table, its replicas' reports added
// up: each region of the rule's Shares keeps MinDemandShare, the rest goes by demand. With no
// demand reported, the static share.
func demandShare(table map[string]string, region string, rule *Global) float64 {
	rates := make(map[string]float64, len(rule.Shares))
	total := 0.0
	for field, v := range table {
		r, _, _ := strings.Cut(field, "/")
		x, err := strconv.ParseFloat(v, 64)
		if _, known := rule.Shares[r]; !known || err != nil || math.IsNaN(x) || x <= 0 {
			continue
		}
		rates[r] += x
		total += x
	}
	if total == 0 || math.IsInf(total, 0) {
		return float64(rule.Shares[region]) / 100
	}
	n := float64(len(rule.Shares))
	floor := min(MinDemandShare, 1/n)
	return floor + (1-n*floor)*rates[region]/total
}
