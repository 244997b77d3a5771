package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/netdelay"
	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/playground/load"
)

// multiRegion builds two regions on this machine — each its own Redis and gateway replicas'
// limiters (the chain a gateway runs, ratelimit.New), the second reaching the home region's
// Redis through a link that adds a round trip (netdelay) — and decides every arrival of a
// stream by one global limit decided the stream's way (ratelimit.GlobalMode): the same
// demand, four ways, side by side. The arrival's region follows the knob home_share; its
// decision's time is the stream's latency and, averaged per second, wait:<mode>; each mode
// has a link of its own, so its trips across are counted apart (cross:<mode>); its
// admissions are counted per second (passed:<mode>) and, per window, above the limit
// (over:<mode>).
type multiRegion struct {
	spec   MultiRegionSpec
	limit  int
	remote string // the region that is not home
	rules  map[ratelimit.GlobalMode]ratelimit.Rule

	dir    string
	stores []*redisconn.Resolved // the regions' stores, and clients across the links
	links  map[ratelimit.GlobalMode]*netdelay.Link
	chains []*ratelimit.Chain
	// regionals[region][replica][mode]
	regionals map[string][]map[ratelimit.GlobalMode]*ratelimit.Regional
	stop      context.CancelFunc
	wg        sync.WaitGroup

	mu      sync.Mutex
	windows map[ratelimit.GlobalMode]map[int64]int // window end (unix s) → admitted
	trips   map[ratelimit.GlobalMode]int64         // at the last poll
	waited  map[ratelimit.GlobalMode]*waited       // since the last poll
}

// waited sums the decisions' times of a mode.
type waited struct {
	total time.Duration
	n     int
}

var _ driver = (*multiRegion)(nil)

// The multi-region driver's knobs.
const (
	knobHomeShare = "home_share" // the share of arrivals from the home region
	knobRTT       = "rtt"        // the link's round trip
)

// Counter name prefixes, followed by a mode.
const (
	counterCross  = "cross:"
	counterOver   = "over:"
	counterPassed = "passed:"
	counterWait   = "wait:"
)

func (s *Scenario) validateMultiRegion() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("multi_region.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	m := s.MultiRegion
	if m == nil {
		return []error{errors.New("multi_region: required for the multi-region driver")}
	}
	g := ratelimit.Global{Mode: ratelimit.GlobalStatic, Shares: m.Shares}
	rule := ratelimit.Rule{ID: "global", Algorithm: ratelimit.FixedWindow, Limit: m.Limit, Window: time.Second, Global: &g}
	switch err := rule.Validate(); {
	case len(m.Shares) != 2:
		bad("shares", "want two regions, each with its percent")
	case err != nil:
		bad("shares", "%v", err)
	}
	if _, ok := m.Shares[m.Home]; !ok {
		bad("home", "%q: want one of the regions in shares", m.Home)
	}
	if m.Limit < 1 || m.Replicas < 1 || m.Replicas > 4 {
		bad("limit", "want a limit of at least 1 and 1 to 4 replicas")
	}
	if m.Rebalance.D() < 100*time.Millisecond || m.Sync.D() < 10*time.Millisecond || m.Sync.D() >= time.Second {
		bad("rebalance", "want a rebalance of at least 100ms and a sync of 10ms to under the 1s window")
	}
	for i, st := range s.Streams {
		if !slices.Contains(ratelimit.GlobalModes, ratelimit.GlobalMode(st.Name)) {
			errs = append(errs, fmt.Errorf("streams[%d].name: %q: want a global mode (home, static, demand, approximate)", i, st.Name))
		}
	}
	for _, k := range []string{knobHomeShare, knobRTT} {
		if s.Knob(k) == nil {
			errs = append(errs, fmt.Errorf("knobs: the multi-region driver needs a %s knob", k))
		}
	}
	return errs
}

func (m *multiRegion) setup(ctx context.Context, r *Run) (err error) {
	m.spec = *r.sc.MultiRegion
	m.limit = m.spec.Limit
	for region := range m.spec.Shares {
		if region != m.spec.Home {
			m.remote = region
		}
	}
	m.rules = map[ratelimit.GlobalMode]ratelimit.Rule{}
	m.windows = map[ratelimit.GlobalMode]map[int64]int{}
	m.trips = map[ratelimit.GlobalMode]int64{}
	m.waited = map[ratelimit.GlobalMode]*waited{}
	m.links = map[ratelimit.GlobalMode]*netdelay.Link{}
	m.regionals = map[string][]map[ratelimit.GlobalMode]*ratelimit.Regional{}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	if m.dir, err = os.MkdirTemp("", "boxoffice-regions-"); err != nil {
		return fmt.Errorf("regions: %w", err)
	}
	stores := map[string]*redisconn.Resolved{}
	for _, region := range []string{m.spec.Home, m.remote} {
		rd, err := redisconn.Private(ctx, redisconn.Options{DataDir: filepath.Join(m.dir, region), Log: r.log})
		if err != nil {
			return fmt.Errorf("region %s's store: %w", region, err)
		}
		m.stores = append(m.stores, rd)
		stores[region] = rd
	}
	u, err := url.Parse(stores[m.spec.Home].URL)
	if err != nil {
		return fmt.Errorf("home store's address: %w", err)
	}
	rtt := r.knobDuration(knobRTT)
	for _, mode := range ratelimit.GlobalModes {
		if m.links[mode], err = netdelay.Listen(u.Host, rtt); err != nil {
			return err
		}
		rule := ratelimit.Rule{ID: "global-" + string(mode), Algorithm: ratelimit.FixedWindow, Limit: m.limit, Window: time.Second,
			Global: &ratelimit.Global{Mode: mode, Shares: m.spec.Shares}}
		if mode == ratelimit.GlobalApproximate {
			rule.Sync = m.spec.Sync.D()
		}
		m.rules[mode] = rule
		m.windows[mode] = map[int64]int{}
		m.waited[mode] = &waited{}
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	m.stop = stop
	for _, region := range []string{m.spec.Home, m.remote} {
		for i := range m.spec.Replicas {
			replica := fmt.Sprintf("%s-%d", region, i+1)
			// Each decision waits for its store up to 500 ms: the lesson is the link, not a
			// loaded machine's fallback.
			local, err := m.chain(runCtx, stores[region].Client, replica, 500*time.Millisecond)
			if err != nil {
				return err
			}
			byMode := map[ratelimit.GlobalMode]*ratelimit.Regional{}
			for _, mode := range ratelimit.GlobalModes {
				o := ratelimit.RegionalOptions{Region: region, Replica: replica, Store: stores[region].Client, Rebalance: m.spec.Rebalance.D()}
				if region != m.spec.Home {
					far, err := redisconn.Dial("redis://" + m.links[mode].Addr() + "/0")
					if err != nil {
						return err
					}
					m.stores = append(m.stores, far)
					o.Store = far.Client
				}
				// Only home and approximate decide at home: a replica of the others has no
				// chain there, whose announcements would cross the link too. It waits out
				// the round trip, up to the knob's ceiling.
				if region != m.spec.Home && (mode == ratelimit.GlobalHome || mode == ratelimit.GlobalApproximate) {
					if o.Home, err = m.chain(runCtx, o.Store, replica+"-"+string(mode), time.Second); err != nil {
						return err
					}
				}
				if byMode[mode], err = ratelimit.NewRegional(local, o); err != nil {
					return err
				}
			}
			m.regionals[region] = append(m.regionals[region], byMode)
		}
	}
	m.wg.Go(func() { m.rebalance(runCtx) })
	r.event(0, "setup", fmt.Sprintf("regions %s (home) and %s, %d replicas each; stores: %s; link round trip %v",
		m.spec.Home, m.remote, m.spec.Replicas, stores[m.spec.Home].Source, rtt))
	return nil
}

// chain is a replica's limiter on client, running until ctx ends.
func (m *multiRegion) chain(ctx context.Context, client redis.UniversalClient, replica string, timeout time.Duration) (*ratelimit.Chain, error) {
	c, err := ratelimit.New(ratelimit.Options{Client: client, ReplicaID: replica, Timeout: timeout, ClosedTimeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", replica, err)
	}
	m.chains = append(m.chains, c)
	m.wg.Go(func() { _ = c.Run(ctx) })
	return c, nil
}

// rebalance runs every regional's demand split, as each gateway replica does.
func (m *multiRegion) rebalance(ctx context.Context) {
	tick := time.NewTicker(m.spec.Rebalance.D())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, replicas := range m.regionals {
			for _, byMode := range replicas {
				_ = byMode[ratelimit.GlobalDemand].Rebalance(ctx) // a failure keeps the split
			}
		}
	}
}

// setRTT changes every link's round trip.
func (m *multiRegion) setRTT(d time.Duration) {
	for _, l := range m.links {
		l.SetRTT(d)
	}
}

// regionOf spreads arrivals over the regions, home a share of them, by the golden ratio's
// sequence: the same arrival number goes to the same region in every stream.
func (m *multiRegion) regionOf(n int64, homeShare float64) string {
	if _, f := math.Modf(float64(n) * 0.6180339887498949); f < homeShare {
		return m.spec.Home
	}
	return m.remote
}

func (m *multiRegion) job(r *Run, s *stream) func(ctx context.Context, c *load.Client, n int64) {
	mode := ratelimit.GlobalMode(s.Name)
	rule := m.rules[mode]
	return func(ctx context.Context, c *load.Client, n int64) {
		share, _ := strconv.ParseFloat(r.knob(knobHomeShare), 64)
		replicas := m.regionals[m.regionOf(n, share)]
		g := replicas[int(n)%len(replicas)][mode]
		rec := c.Recorder()
		rec.Sent(s.Name, true)
		start := c.Now()
		res, err := g.Allow(ctx, []ratelimit.Request{{Rule: rule, Key: "global"}})
		end := c.Now()
		took := end.Sub(start)
		m.mu.Lock()
		m.waited[mode].total += took
		m.waited[mode].n++
		m.mu.Unlock()
		switch {
		case err != nil:
			rec.Done(s.Name, load.ServerError, took)
		case !res.Allowed:
			rec.Done(s.Name, load.TooMany, took)
		default:
			rec.Done(s.Name, load.OK, took)
			rec.Succeeded(s.Name)
			rec.Count(counterPassed+s.Name, 1)
			// The window the decision fell in ends Reset after it was made, about halfway
			// through the call: rounded to the second, that is exact while calls take
			// under half a second.
			window := end.Add(res.Reset - took/2).Round(time.Second).Unix()
			m.mu.Lock()
			m.windows[mode][window]++
			m.mu.Unlock()
		}
	}
}

// poll counts each mode's trips across its link in the second, its admissions above the
// limit in every window ended two seconds ago or more (late decisions land by then), and
// the mean time of its decisions in the second.
func (m *multiRegion) poll(_ context.Context, r *Run) map[string]float64 {
	out := map[string]float64{}
	done := time.Now().Add(-2 * time.Second).Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	for mode, l := range m.links {
		t := l.Trips()
		out[counterCross+string(mode)] = float64(t - m.trips[mode])
		m.trips[mode] = t
		over := 0
		for end, n := range m.windows[mode] {
			if end <= done {
				over += max(0, n-m.limit)
				delete(m.windows[mode], end)
			}
		}
		out[counterOver+string(mode)] = float64(over)
		if w := m.waited[mode]; w.n > 0 {
			out[counterWait+string(mode)] = float64(w.total.Microseconds()) / 1000 / float64(w.n)
			*w = waited{}
		}
	}
	return out
}

func (m *multiRegion) finish(context.Context, *Run) { m.close() }

// close stops and removes everything setup built; safe on a partial setup.
func (m *multiRegion) close() {
	if m.stop != nil {
		m.stop()
	}
	m.wg.Wait()
	var errs []error
	for _, c := range m.chains {
		errs = append(errs, c.Close())
	}
	for _, mode := range slices.Sorted(maps.Keys(m.links)) {
		errs = append(errs, m.links[mode].Close())
	}
	for _, s := range m.stores {
		errs = append(errs, s.Close())
	}
	if m.dir != "" {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	_ = errors.Join(errs...) // nothing is left to do with a failed close at the end of a run
}
