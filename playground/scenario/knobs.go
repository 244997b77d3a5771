package scenario

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/playground/load"
)

// The knobs the runner knows how to turn. A scenario lists the ones it offers (with kinds,
// options and defaults); a name outside this vocabulary, or a stream's rate knob, is refused
// when the scenario is parsed.
//
//	limit, algorithm, rate, burst, key   the scenario's gateway limit (Scenario.Limit) on its route
//	limit_mode, enforce_percent          that limit's mode (enforce | shadow) and the share
//	                                     of its keys enforced (a rollout)
//	queue, max_delay                     off | delay | nodelay: that limit shapes, a gcra whose
//	                                     queue holds burst requests (shapeLimit)
//	capacity, service_time               the backend's slots per instance and work per request
//	outage                               off | down (503 at once) | hang (no answer in time)
//	latency                              added to every backend request
//	retry, retries, jitter, budget       the simulated clients' behaviour
//	gateway_retry                        the route's one budgeted retry at the gateway
//	gateway_retry_budget                 the backend service's retry budget at the gateway:
//	                                     off | <percent>% | <percent>%+<floor>/s (see parseRetryBudget)
//	gateway_max_in_flight                the backend service's concurrency limit at the gateway
//	                                     (0: as the policy has it); over it, 503 at once
//	gateway_adaptive                     policy (as found) | off | a latency target (200ms):
//	                                     that limit adapts, at or below gateway_max_in_flight
//	admit_rate                           the waiting room's admissions per second (flash-sale)
//	ip_rate                              the gateway's per-IP limit (api-per-ip), per second
//	holds_per_minute                     the gateway's holds-per-account limit
//	store                                up | stalled | killed: the limiter's Redis (see StoreUp)
//	script_holds_via                     rest | graphql | graphql-mobile | graphql-web: the
//	                                     door a flash sale's scripts hold through (scriptDoors)
//	home_share, rtt                      the share of arrivals from the home region and the
//	                                     link's round trip (multi-region)
var knobVocabulary = []string{
	"limit", "algorithm", "rate", "burst", "key", "limit_mode", "enforce_percent", "queue", "max_delay",
	"capacity", "service_time", "outage", "latency",
	"retry", "retries", "jitter", "budget", "gateway_retry", "gateway_retry_budget",
	"gateway_max_in_flight", "gateway_adaptive",
	"admit_rate", "ip_rate", "holds_per_minute", "store", "script_holds_via",
	knobHomeShare, knobRTT,
}

// hangLatency is what "outage: hang" injects: longer than any client's timeout, so every
// request times out, as in front of a backend that accepts connections and never answers.
const hangLatency = 30 * time.Second

// The gateway's own limits the flash-sale knobs edit (gateway/policy.yaml).
const (
	limitPerIP    = "api-per-ip"
	limitHoldsAcc = "holds-per-account"
)

// applyAll puts every knob in force, as a run starts.
func (r *Run) applyAll(ctx context.Context) error {
	done := map[string]bool{}
	for _, k := range r.sc.Knobs {
		g := knobGroup(k.Name)
		if done[g] {
			continue
		}
		done[g] = true
		if err := r.apply(ctx, k.Name); err != nil {
			return fmt.Errorf("knob %s: %w", k.Name, err)
		}
	}
	return nil
}

// knobGroup names the set of knobs applied together: the limit's, the backend's.
func knobGroup(name string) string {
	switch name {
	case "limit", "algorithm", "rate", "burst", "key", "limit_mode", "enforce_percent", "queue", "max_delay":
		return "limit"
	case "capacity", "service_time", "outage", "latency":
		return "backend"
	case "gateway_max_in_flight", "gateway_adaptive":
		return "gateway_concurrency"
	}
	return name
}

// apply puts the knob's current value in force in the system. Client-side knobs (retry,
// rates) take effect by being read at the next arrival and need nothing here.
func (r *Run) apply(ctx context.Context, name string) error {
	switch knobGroup(name) {
	case "limit":
		return r.applyLimit(ctx)
	case "backend":
		return r.applyBackend(ctx)
	case "gateway_retry":
		return r.applyGatewayRetry(ctx)
	case "gateway_retry_budget":
		return r.applyGatewayRetryBudget(ctx)
	case "gateway_concurrency":
		return r.applyGatewayConcurrency(ctx)
	case "store":
		return r.applyStore(ctx)
	case knobRTT:
		if m, ok := r.driver.(*multiRegion); ok {
			m.setRTT(r.knobDuration(knobRTT))
		}
		return nil
	case "admit_rate":
		if fs, ok := r.driver.(*flashSale); ok {
			return fs.setAdmitRate(ctx, r)
		}
		return nil
	case "ip_rate":
		return r.editGatewayLimit(ctx, limitPerIP, func(l *adminLimit) {
			n := r.knobInt("ip_rate")
			l.Rate, l.Burst = strconv.Itoa(n)+"/s", 2*n
		})
	case "holds_per_minute":
		return r.editGatewayLimit(ctx, limitHoldsAcc, func(l *adminLimit) {
			n := r.knobInt("holds_per_minute")
			l.Rate, l.Burst = strconv.Itoa(n)+"/1m", n
		})
	}
	return nil
}

func (r *Run) knobInt(name string) int {
	n, _ := strconv.Atoi(r.knob(name))
	return n
}

func (r *Run) knobDuration(name string) time.Duration {
	d, _ := time.ParseDuration(r.knob(name))
	return d
}

func (r *Run) knobBool(name string) bool {
	b, _ := strconv.ParseBool(r.knob(name))
	return b
}

// applyLimit writes the scenario's limit from the knobs and attaches it to (or detaches it
// from) the scenario's route. The first time, it remembers the route's limits and the limit
// as they were, to put back when the run ends.
func (r *Run) applyLimit(ctx context.Context) error {
	id, route := r.sc.Limit.ID, r.sc.Request.Route
	if id == "" || route == "" {
		return errors.New("the scenario names no limit id or no route")
	}
	if err := r.rememberRoute(ctx, route); err != nil {
		return err
	}
	if err := r.rememberLimit(ctx, id); err != nil {
		return err
	}
	l := adminLimit{ID: id, Key: r.knob("key"), Algorithm: r.knob("algorithm"), Rate: r.knob("rate") + "/s"}
	if l.Key == "" {
		l.Key = "route"
	}
	if l.Algorithm == "" {
		l.Algorithm = "token_bucket"
	}
	if b := r.knobInt("burst"); b > 0 && (l.Algorithm == "token_bucket" || l.Algorithm == "gcra") {
		l.Burst = b
	}
	l.Mode = r.knob("limit_mode")
	if r.sc.Knob("enforce_percent") != nil {
		p := r.knobInt("enforce_percent")
		l.EnforcePercent = &p
	}
	shapeLimit(&l, r.knob("queue"), r.knobInt("burst"), r.knob("max_delay"))
	if err := r.sys.putLimit(ctx, l); err != nil {
		return err
	}
	r.mu.Lock()
	orig := r.origRoutes[route]
	r.mu.Unlock()
	limits := slices.DeleteFunc(slices.Clone(orig), func(s string) bool { return s == id })
	if r.knobBool("limit") {
		limits = append(limits, id)
	}
	return r.sys.setRouteLimits(ctx, route, limits)
}

// rememberRoute keeps a route's limits as the run found them and registers putting them
// back, once per route.
func (r *Run) rememberRoute(ctx context.Context, route string) error {
	r.mu.Lock()
	_, seen := r.origRoutes[route]
	r.mu.Unlock()
	if seen {
		return nil
	}
	limits, err := r.sys.routeLimits(ctx, route)
	if err != nil {
		return err
	}
	// Remembered only once the undo is recorded: a later call must not skip recording it.
	if err := r.undoEdit(ctx, "route", route); err != nil {
		return err
	}
	r.mu.Lock()
	if r.origRoutes == nil {
		r.origRoutes = map[string][]string{}
	}
	r.origRoutes[route] = limits
	r.mu.Unlock()
	return nil
}

// rememberLimit registers putting a gateway limit back as the run found it (deleting it when
// the run created it), once per limit.
func (r *Run) rememberLimit(ctx context.Context, id string) error {
	r.mu.Lock()
	if r.origLimits == nil {
		r.origLimits = map[string]*adminLimit{}
	}
	_, seen := r.origLimits[id]
	r.mu.Unlock()
	if seen {
		return nil
	}
	l, found, err := r.sys.limit(ctx, id)
	if err != nil {
		return err
	}
	var orig *adminLimit
	if found {
		orig = &l
	}
	if err := r.undoEdit(ctx, "limit", id); err != nil {
		return err
	}
	r.mu.Lock()
	r.origLimits[id] = orig
	r.mu.Unlock()
	return nil
}

// editGatewayLimit changes one of the gateway's own limits, from how the run found it.
func (r *Run) editGatewayLimit(ctx context.Context, id string, edit func(l *adminLimit)) error {
	if err := r.rememberLimit(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	orig := r.origLimits[id]
	r.mu.Unlock()
	if orig == nil {
		return fmt.Errorf("the gateway has no limit %s", id)
	}
	l := *orig
	edit(&l)
	return r.sys.putLimit(ctx, l)
}

// applyBackend gives every replica of the backend the knobs' capacity and faults. The first
// time, it remembers the knobs in force, to put back when the run ends.
func (r *Run) applyBackend(ctx context.Context) error {
	svc := r.sc.Backend.Service
	if svc == "" {
		return errors.New("the scenario names no backend service")
	}
	r.mu.Lock()
	seen := r.origBackend != nil
	r.mu.Unlock()
	if !seen {
		// Without an instance to ask (a target reached over NATS only), the knobs to put back
		// are a healthy replica's: the zero knobs every replica starts with.
		var orig control.Knobs
		if len(r.target.Services[svc]) > 0 {
			var err error
			if orig, err = r.sys.knobs(ctx, svc); err != nil {
				return err
			}
		}
		if err := r.undo(entry{Kind: entryKnobs, ID: svc, Knobs: &orig}); err != nil {
			return err
		}
		r.mu.Lock()
		r.origBackend = &orig
		r.mu.Unlock()
	}
	return r.sys.setKnobs(ctx, svc, r.backendKnobs())
}

// backendKnobs are the control knobs the scenario's knobs describe; a knob the scenario does
// not offer takes the scenario's backend value.
func (r *Run) backendKnobs() control.Knobs {
	k := control.Knobs{MaxConcurrent: r.sc.Backend.MaxConcurrent, ServiceTime: r.sc.Backend.ServiceTime.D()}
	if v := r.knob("capacity"); v != "" {
		k.MaxConcurrent, _ = strconv.Atoi(v)
	}
	if v := r.knob("service_time"); v != "" {
		k.ServiceTime, _ = time.ParseDuration(v)
	}
	if v := r.knob("latency"); v != "" {
		k.Latency, _ = time.ParseDuration(v)
	}
	switch r.knob("outage") {
	case "down", "true":
		k.Outage = true
	case "hang":
		k.Latency = hangLatency
	}
	return k
}

// applyGatewayRetry turns the gateway's one budgeted retry on the scenario's route on or off.
func (r *Run) applyGatewayRetry(ctx context.Context) error {
	route := r.sc.Request.Route
	r.mu.Lock()
	seen := r.retrySeen
	r.mu.Unlock()
	if !seen {
		if err := r.undoEdit(ctx, "route", route); err != nil {
			return err
		}
		r.mu.Lock()
		r.retrySeen = true
		r.mu.Unlock()
	}
	return r.sys.admin(ctx, "PATCH", "/admin/routes/"+route, map[string]any{"retry": r.knobBool("gateway_retry")}, nil)
}

// retryBudget is a service's retry_budget as the gateway's admin API shows it.
type retryBudget struct {
	Ratio        float64 `json:"ratio"`
	MinPerSecond float64 `json:"min_per_second"`
	Window       string  `json:"window"`
	Unlimited    bool    `json:"unlimited"`
}

// parseRetryBudget reads a gateway_retry_budget value over the budget the run found:
//
//	off        no budget: the gateway retries every eligible failure once (the storm)
//	20%        retries up to 20% of recent requests, over the found floor and window
//	10%+1/s    the same with a floor of 1 retry a second (the found one is 10/s, which at
//	           a few dozen requests a second outweighs any ratio)
//
// The percentage is above 0 and at most 100: to turn the gateway's retry off, use the
// gateway_retry knob.
func parseRetryBudget(v string, found retryBudget) (retryBudget, error) {
	b := found
	b.Unlimited = false
	if v == "off" {
		b.Unlimited = true
		return b, nil
	}
	pct, floor, hasFloor := strings.Cut(v, "+")
	n, err := strconv.ParseFloat(strings.TrimSuffix(pct, "%"), 64)
	if err != nil || !strings.HasSuffix(pct, "%") || n <= 0 || n > 100 {
		return b, fmt.Errorf("%q: want off, or a percentage above 0 and at most 100 such as 20%%, optionally +<floor>/s", v)
	}
	b.Ratio = n / 100
	if hasFloor {
		f, err := strconv.ParseFloat(strings.TrimSuffix(floor, "/s"), 64)
		if err != nil || !strings.HasSuffix(floor, "/s") || f <= 0 {
			return b, fmt.Errorf("%q: the floor %q: want a positive rate such as 1/s", v, floor)
		}
		b.MinPerSecond = f
	}
	return b, nil
}

// applyGatewayRetryBudget sets the gateway's retry budget for the scenario's backend service,
// read over the budget the run found, so turning the knob back undoes a floor set before.
func (r *Run) applyGatewayRetryBudget(ctx context.Context) error {
	svc, found, err := r.foundService(ctx)
	if err != nil {
		return err
	}
	b, err := parseRetryBudget(r.knob("gateway_retry_budget"), found.RetryBudget)
	if err != nil {
		return err
	}
	return r.sys.admin(ctx, http.MethodPatch, "/admin/services/"+svc, map[string]any{"retry_budget": b}, nil)
}

// serviceKnobs are the backend service's knobs at the gateway that scenarios turn.
type serviceKnobs struct {
	RetryBudget retryBudget `json:"retry_budget"`
	concurrency
}

// foundService names the scenario's backend service and its knobs at the gateway as the run
// found them. The first call reads them and registers putting the service back when the run
// ends (by dropping the run's edit of it); later calls return what it read.
func (r *Run) foundService(ctx context.Context) (string, *serviceKnobs, error) {
	svc := r.sc.Backend.Service
	if svc == "" {
		return "", nil, errors.New("the scenario names no backend service")
	}
	r.mu.Lock()
	found := r.origService
	r.mu.Unlock()
	if found != nil {
		return svc, found, nil
	}
	found = &serviceKnobs{}
	if err := r.sys.admin(ctx, http.MethodGet, "/admin/services/"+svc, nil, found); err != nil {
		return "", nil, err
	}
	if err := r.undoEdit(ctx, "service", svc); err != nil {
		return "", nil, err // not remembered: the next call registers the undo again
	}
	r.mu.Lock()
	r.origService = found
	r.mu.Unlock()
	return svc, found, nil
}

// concurrency is a service's concurrency limit as the gateway's admin API shows it.
type concurrency struct {
	MaxInFlight int       `json:"max_in_flight"`
	Adaptive    *adaptive `json:"adaptive_concurrency"` // nil: MaxInFlight is fixed
}

type adaptive struct {
	LatencyTarget string `json:"latency_target"`
	MinInFlight   int    `json:"min_in_flight"` // 0 too: a PATCH merges, so a field left out stays
}

// adaptiveFloor is the min_in_flight of the limit gateway_adaptive turns on: a backend
// always gets a couple of requests to show it has recovered.
const adaptiveFloor = 2

// keepAdaptive is the gateway_adaptive value that leaves the adaptation as the run found it.
const keepAdaptive = "policy"

// parseAdaptive reads a gateway_adaptive value other than keepAdaptive: off (a fixed limit),
// or the latency target of an adaptive one, a positive duration such as 200ms.
func parseAdaptive(v string) (*adaptive, error) {
	if v == "off" {
		return nil, nil
	}
	if d, err := time.ParseDuration(v); err != nil || d <= 0 {
		return nil, fmt.Errorf("%q: want off, or a latency target such as 200ms", v)
	}
	return &adaptive{LatencyTarget: v, MinInFlight: adaptiveFloor}, nil
}

// applyGatewayConcurrency sets the concurrency limit of the scenario's backend service at the
// gateway: its max_in_flight (0 keeps the one the run found) and whether it adapts (policy
// keeps what the run found). Knobs that ask for the service as found change nothing until
// another value has been put: a run that never turns them leaves no edit behind.
func (r *Run) applyGatewayConcurrency(ctx context.Context) error {
	svc, found, err := r.foundService(ctx)
	if err != nil {
		return err
	}
	c := found.concurrency
	if n := r.knobInt("gateway_max_in_flight"); n > 0 {
		c.MaxInFlight = n
	}
	if v := r.knob("gateway_adaptive"); v != "" && v != keepAdaptive {
		if c.Adaptive, err = parseAdaptive(v); err != nil {
			return err
		}
	}
	r.mu.Lock()
	edited := r.concurrencyEdited
	r.mu.Unlock()
	if !edited && reflect.DeepEqual(c, found.concurrency) {
		return nil
	}
	if err := r.sys.admin(ctx, http.MethodPatch, "/admin/services/"+svc, c, nil); err != nil {
		return err
	}
	r.mu.Lock()
	r.concurrencyEdited = true
	r.mu.Unlock()
	return nil
}

// checkKnobs reports knob names a scenario lists that the runner cannot turn.
func (s *Scenario) checkKnobs() error {
	var errs []error
	rateKnobs := map[string]bool{}
	for _, st := range s.Streams {
		if st.RateKnob != "" {
			rateKnobs[st.RateKnob] = true
		}
	}
	for _, k := range s.Knobs {
		if !slices.Contains(knobVocabulary, k.Name) && !rateKnobs[k.Name] {
			errs = append(errs, fmt.Errorf("knobs[%s]: not a knob the runner can turn (want one of %v, or a stream's rate_knob)", k.Name, knobVocabulary))
		}
		if k.Name == "gateway_retry_budget" {
			if k.Kind != "enum" {
				errs = append(errs, fmt.Errorf("knobs[gateway_retry_budget].kind: %q: want enum", k.Kind))
			}
			for _, v := range append([]string{k.Default}, k.Options...) {
				if _, err := parseRetryBudget(v, retryBudget{}); err != nil {
					errs = append(errs, fmt.Errorf("knobs[gateway_retry_budget]: %w", err))
				}
			}
		}
		if k.Name == "store" {
			states := []string{StoreUp, StoreStalled, StoreKilled}
			if k.Kind != "enum" || !slices.Contains(k.Options, StoreUp) {
				errs = append(errs, fmt.Errorf("knobs[store]: want an enum with %s among its options", StoreUp))
			}
			for _, o := range k.Options {
				if !slices.Contains(states, o) {
					errs = append(errs, fmt.Errorf("knobs[store].options: %q: want %s", o, strings.Join(states, ", ")))
				}
			}
		}
		if k.Name == "gateway_adaptive" {
			for _, v := range append([]string{k.Default}, k.Options...) {
				if v == keepAdaptive {
					continue
				}
				if _, err := parseAdaptive(v); err != nil {
					errs = append(errs, fmt.Errorf("knobs[gateway_adaptive]: %w", err))
				}
			}
		}
		if k.Name == "script_holds_via" {
			if err := checkScriptDoors(s, k); err != nil {
				errs = append(errs, err)
			}
		}
		if k.Name == "retry" {
			for _, o := range k.Options {
				if _, err := load.Policy(o, 0); err != nil {
					errs = append(errs, fmt.Errorf("knobs[retry].options: %w", err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
