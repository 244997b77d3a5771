// Package scenario runs the playground's scenarios: it reads their definitions (data, in
// scenarios/*.yaml), turns the running system's knobs through the gateway's admin API and the
// services' control hooks, drives the open-model load engine (boxoffice.dev/playground/load)
// phase by phase, streams one Sample per second, and checks the scenario's expectations —
// each a comparison between phases or knob settings — when the run ends.
//
// The same Run serves the web UI (Subscribe, History, SetKnob) and the headless CLI
// (`boxoffice scenario run`, which waits on Done and prints Result).
package scenario

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/playground/load"
)

// Scenario is one parsed scenarios/<name>.yaml: what the run drives, the knobs a person may
// turn while it runs, and its profiles (load shapes with expectations).
type Scenario struct {
	// Name is the file's base name and the CLI's argument: rate-limiter, retry-storm, flash-sale.
	Name  string `yaml:"name" json:"name"`
	Title string `yaml:"title" json:"title"`
	// Explainer is a few sentences of plain text (paragraphs separated by a blank line) that
	// say what to watch for.
	Explainer string `yaml:"explainer" json:"explainer"`
	// DocsPath is the lesson page in the repository, e.g. docs/lessons/rate-limiting.md.
	DocsPath string `yaml:"docs" json:"docs"`
	// Driver says how one arrival becomes requests: "request" (one request per arrival, with
	// the client's retry behaviour), "flash-sale" (a fan's whole journey: queue, hold,
	// order) or "multi-region" (one decision of a global limit, in a region of its own).
	Driver string `yaml:"driver" json:"driver"`
	// Request is what the "request" driver sends.
	Request RequestSpec `yaml:"request" json:"request"`
	// Backend is the service whose capacity the scenario fixes through its control hook, and
	// whose in-flight work the samples report.
	Backend BackendSpec `yaml:"backend" json:"backend"`
	// Limit is the gateway limit the scenario's limit knobs edit (created for the run and
	// attached to Request's route when the "limit" knob is on).
	Limit LimitSpec `yaml:"limit" json:"limit"`
	// Streams are the traffic sources, each with its own identities and share of the
	// arrivals; at least one.
	Streams []StreamSpec `yaml:"streams" json:"streams"`
	// FlashSale configures the "flash-sale" driver.
	FlashSale *FlashSaleSpec `yaml:"flash_sale,omitempty" json:"flash_sale,omitempty"`
	// MultiRegion configures the "multi-region" driver.
	MultiRegion *MultiRegionSpec `yaml:"multi_region,omitempty" json:"multi_region,omitempty"`
	// Client is the request timeout and retry behaviour before any knob changes it.
	Client ClientSpec `yaml:"client" json:"client"`
	// Knobs are the settings a person (or a phase) can change while the run goes on.
	Knobs    []KnobSpec `yaml:"knobs" json:"knobs"`
	Profiles []Profile  `yaml:"profiles" json:"profiles"`
	// Counters name the scenario's own per-second series (Sample.Counters), in display order.
	Counters []CounterSpec `yaml:"counters" json:"counters"`
}

// RequestSpec is one HTTP request, sent through the gateway.
type RequestSpec struct {
	Method string `yaml:"method" json:"method"`
	// Path may contain {event}, replaced by the run's event id (flash-sale).
	Path string `yaml:"path" json:"path"`
	// Route is the gateway route id the path matches (the limit knob attaches to it).
	Route string `yaml:"route" json:"route"`
	// Body, when set, is sent as JSON, with {email} and {password} replaced by the demo
	// account of the identity sending it (identity account or user): a login.
	Body string `yaml:"body,omitempty" json:"body,omitempty"`
}

// BackendSpec is a service and the capacity its control hook gives every replica:
// MaxConcurrent / ServiceTime requests per second per replica.
type BackendSpec struct {
	Service       string   `yaml:"service" json:"service"`
	MaxConcurrent int      `yaml:"max_concurrent" json:"max_concurrent"`
	ServiceTime   Duration `yaml:"service_time" json:"service_time"`
}

// LimitSpec is the gateway limit a scenario owns while it runs; the knobs "limit",
// "algorithm", "rate", "burst" and "key" edit it.
type LimitSpec struct {
	ID string `yaml:"id" json:"id"`
}

// StreamSpec is one source of traffic: a share of the arrivals (or a rate of its own) and the
// identities it sends as.
type StreamSpec struct {
	Name string `yaml:"name" json:"name"`
	// Identity is what tells its requests apart at the gateway: "ip" (a fake client IP per
	// identity, in X-Forwarded-For), "user" (a logged-in demo fan; also a fake IP each),
	// "account" (a demo fan's account, not logged in: for a login body; a fake IP each),
	// "apikey" (the demo partners' keys).
	Identity string `yaml:"identity" json:"identity"`
	// Count is how many distinct identities the stream spreads over; 0 means 1.
	Count int `yaml:"count" json:"count"`
	// RateKnob, when set, names the knob whose value is this stream's own arrival rate; the
	// phase's rate then drives only the streams without one.
	RateKnob string `yaml:"rate_knob,omitempty" json:"rate_knob,omitempty"`
	// Request, when set, is what the stream sends instead of the scenario's Request (logins
	// beside page views, say); the "request" driver only.
	Request *RequestSpec `yaml:"request,omitempty" json:"request,omitempty"`
}

// FlashSaleSpec sets up the on-sale: a fresh event per run with Seats seats, and the fans'
// journey.
type FlashSaleSpec struct {
	Seats int `yaml:"seats" json:"seats"`
	// Fans is how many demo accounts log in before the run (reused tokens: logging in is
	// bcrypt-slow on purpose).
	Fans int `yaml:"fans" json:"fans"`
	// HoldAttempts is how many times a fan tries to hold a seat once admitted; greedy fans
	// (GreedyShare of them) try GreedyAttempts times, fast, and meet the per-account limit.
	HoldAttempts   int     `yaml:"hold_attempts" json:"hold_attempts"`
	GreedyShare    float64 `yaml:"greedy_share" json:"greedy_share"`
	GreedyAttempts int     `yaml:"greedy_attempts" json:"greedy_attempts"`
	// PollEvery is the waiting-room poll interval; QueueTimeout how long a fan waits at most.
	PollEvery    Duration `yaml:"poll_every" json:"poll_every"`
	QueueTimeout Duration `yaml:"queue_timeout" json:"queue_timeout"`
}

// MultiRegionSpec sets up the two regions the "multi-region" driver builds on this machine:
// each its own store and replicas, the link between them, and the global limit they share.
// Each stream is one way to decide that limit, named after it (ratelimit.GlobalModes).
type MultiRegionSpec struct {
	// Home is the region whose store holds global counts; Shares names both regions with
	// their percent of the limit under a static split (and a demand split's start).
	Home   string         `yaml:"home" json:"home"`
	Shares map[string]int `yaml:"shares" json:"shares"`
	// Limit is the global limit, requests per second, in a fixed window.
	Limit int `yaml:"limit" json:"limit"`
	// Replicas is each region's number of gateway replicas.
	Replicas int `yaml:"replicas" json:"replicas"`
	// Rebalance is how often a demand split is recomputed; Sync how often approximate
	// counts are synced.
	Rebalance Duration `yaml:"rebalance" json:"rebalance"`
	Sync      Duration `yaml:"sync" json:"sync"`
}

// ClientSpec is the simulated clients' behaviour.
type ClientSpec struct {
	// Timeout bounds every attempt; 0 means 2s.
	Timeout Duration `yaml:"timeout" json:"timeout"`
	// Retry is a policy name: none, naive, backoff, retry-after, backoff-budget, pace.
	Retry string `yaml:"retry" json:"retry"`
	// Retries is N for the retrying policies; 0 means 3.
	Retries int `yaml:"retries" json:"retries"`
	// Expected lists the 4xx answers the scenario expects as part of its story (a seat
	// someone else holds, a sold-out event), so the page counts them as refusals rather
	// than beside timeouts and errors; 429 is always counted apart.
	Expected []Refusal `yaml:"expected,omitempty" json:"expected,omitempty"`
}

// Refusal is a 4xx status a scenario expects, and what it means there.
type Refusal struct {
	Status  int    `yaml:"status" json:"status"`
	Meaning string `yaml:"meaning" json:"meaning"`
}

// KnobSpec describes a knob: its kind, its allowed values and its value when a run starts.
type KnobSpec struct {
	Name  string `yaml:"name" json:"name"`
	Label string `yaml:"label" json:"label"`
	// Kind is bool, int, float, duration or enum.
	Kind    string   `yaml:"kind" json:"kind"`
	Options []string `yaml:"options,omitempty" json:"options,omitempty"`
	// Min and Max bound an int, float or duration knob, written in its kind ("1", "0.5",
	// "5s"); a value outside them is refused. Min defaults to 0: every number the runner
	// turns is a count, a rate or a duration. Max defaults to the kind's ceiling
	// (knobCeilings), which a scenario may lower but not raise. Bool and enum knobs take
	// neither.
	Min     string `yaml:"min,omitempty" json:"min,omitempty"`
	Max     string `yaml:"max,omitempty" json:"max,omitempty"`
	Default string `yaml:"default" json:"default"`
	Help    string `yaml:"help" json:"help"`
	// Needs, when set, is the condition under which the knob does anything at all (a limit's
	// rate while the limit is off does nothing); the page says so beside an inert knob.
	Needs *KnobNeed `yaml:"needs,omitempty" json:"needs,omitempty"`
}

// KnobNeed says a knob acts only while another knob has one of Values.
type KnobNeed struct {
	Knob   string   `yaml:"knob" json:"knob"`
	Values []string `yaml:"values" json:"values"`
}

// Profile is a load shape: phases run one after another, then the expectations are checked.
type Profile struct {
	Name   string        `yaml:"name" json:"name"`
	Title  string        `yaml:"title" json:"title"`
	Phases []Phase       `yaml:"phases" json:"phases"`
	Expect []Expectation `yaml:"expect" json:"expect"`
}

// Phase is a stretch of load: an arrival rate (steady, or ramped from Rate to To) and the
// knob values put in force as it starts. Knobs keep their values into later phases until a
// phase changes them.
type Phase struct {
	Name     string   `yaml:"name" json:"name"`
	Duration Duration `yaml:"duration" json:"duration"`
	// Rate is arrivals per second; To, when set, ramps linearly from Rate to To.
	Rate float64 `yaml:"rate" json:"rate"`
	To   float64 `yaml:"to,omitempty" json:"to,omitempty"`
	// Settle is the phase's first stretch, left out of its statistics: the queue a previous
	// phase built drains, a new limit's bucket fills.
	Settle Duration          `yaml:"settle,omitempty" json:"settle,omitempty"`
	Knobs  map[string]string `yaml:"knobs,omitempty" json:"knobs,omitempty"`
}

// Expectation compares a measure of one phase with a constant or with a measure of another
// phase: "p99 of accepted in limit-on <= 0.5 × p99 of accepted in limit-off".
type Expectation struct {
	Name string  `yaml:"name" json:"name"`
	Left Measure `yaml:"left" json:"left"`
	// Op is one of < <= > >= ==.
	Op string `yaml:"op" json:"op"`
	// Right is the other phase's measure, multiplied by Factor (0 means 1); nil compares with
	// Value.
	Right  *Measure `yaml:"right,omitempty" json:"right,omitempty"`
	Factor float64  `yaml:"factor,omitempty" json:"factor,omitempty"`
	Value  float64  `yaml:"value,omitempty" json:"value,omitempty"`
}

// Measure names one number of a run: Metric (see Stats.Metric) over Phase ("" means the
// whole run), restricted to Stream ("" means every stream).
type Measure struct {
	Metric string `yaml:"metric" json:"metric"`
	Phase  string `yaml:"phase,omitempty" json:"phase,omitempty"`
	Stream string `yaml:"stream,omitempty" json:"stream,omitempty"`
}

// CounterSpec is one of a scenario's own series.
type CounterSpec struct {
	Name  string `yaml:"name" json:"name"`
	Label string `yaml:"label" json:"label"`
	// Kind is count (the default: per-second amounts, summed over a phase) or gauge (a level,
	// such as the queue's length: a phase's last value).
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty"`
}

// Duration is a time.Duration written as "250ms" or "5s" in YAML and JSON.
type Duration = config.Duration

// Profile returns the profile named name; "" means the first.
func (s *Scenario) Profile(name string) (*Profile, error) {
	if name == "" && len(s.Profiles) > 0 {
		return &s.Profiles[0], nil
	}
	for i := range s.Profiles {
		if s.Profiles[i].Name == name {
			return &s.Profiles[i], nil
		}
	}
	names := make([]string, len(s.Profiles))
	for i, p := range s.Profiles {
		names[i] = p.Name
	}
	return nil, fmt.Errorf("scenario %s has no profile %q (profiles: %s)", s.Name, name, strings.Join(names, ", "))
}

// hasCounter reports whether the scenario lists a counter with one of names.
func (s *Scenario) hasCounter(names ...string) bool {
	return slices.ContainsFunc(s.Counters, func(c CounterSpec) bool { return slices.Contains(names, c.Name) })
}

// Knob returns the knob named name, or nil.
func (s *Scenario) Knob(name string) *KnobSpec {
	for i := range s.Knobs {
		if s.Knobs[i].Name == name {
			return &s.Knobs[i]
		}
	}
	return nil
}

// Duration is the profile's total length.
func (p Profile) Duration() time.Duration {
	var d time.Duration
	for _, ph := range p.Phases {
		d += ph.Duration.D()
	}
	return d
}

// LoadDir parses every *.yaml file at the root of fsys (scenarios.FS in the binaries), in
// name order. A file that does not parse or validate fails the whole load, naming the file.
func LoadDir(fsys fs.FS) ([]Scenario, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	slices.Sort(names)
	var out []Scenario
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
		sc, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if want := strings.TrimSuffix(path.Base(n), ".yaml"); sc.Name != want {
			return nil, fmt.Errorf("%s: name %q, want the file's base name %q", n, sc.Name, want)
		}
		out = append(out, sc)
	}
	return out, nil
}

// Find returns the scenario named name from list.
func Find(list []Scenario, name string) (Scenario, error) {
	for _, s := range list {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = s.Name
	}
	return Scenario{}, fmt.Errorf("no scenario %q (scenarios: %s)", name, strings.Join(names, ", "))
}

// Parse reads one scenario document strictly (an unknown field is an error) and validates it.
func Parse(b []byte) (Scenario, error) {
	var sc Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return Scenario{}, fmt.Errorf("parse: %w", err)
	}
	if err := sc.validate(); err != nil {
		return Scenario{}, err
	}
	return sc, nil
}

// validate checks what a run relies on, naming the field at fault.
func (s *Scenario) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if s.Name == "" {
		bad("name", "required")
	}
	switch s.Driver {
	case "request":
		if s.Request.Method == "" || s.Request.Path == "" {
			bad("request", "method and path are required for the request driver")
		}
	case "flash-sale":
		if s.FlashSale == nil || s.FlashSale.Seats < 1 || s.FlashSale.Fans < 1 {
			bad("flash_sale", "seats and fans are required for the flash-sale driver")
		}
	case "multi-region":
		errs = append(errs, s.validateMultiRegion()...)
	default:
		bad("driver", "%q: want request, flash-sale or multi-region", s.Driver)
	}
	if len(s.Streams) == 0 {
		bad("streams", "at least one stream is required")
	}
	for i, st := range s.Streams {
		switch st.Identity {
		case "ip", "user", "account", "apikey":
		default:
			bad(fmt.Sprintf("streams[%d].identity", i), "%q: want ip, user, account or apikey", st.Identity)
		}
		req := s.Request
		if st.Request != nil {
			req = *st.Request
			if s.Driver != "request" || req.Method == "" || req.Path == "" {
				bad(fmt.Sprintf("streams[%d].request", i), "a stream's own request needs the request driver, a method and a path")
			}
		}
		if strings.Contains(req.Body, "{email}") || strings.Contains(req.Body, "{password}") {
			if st.Identity != "account" && st.Identity != "user" {
				bad(fmt.Sprintf("streams[%d]", i), "a body with {email} or {password} needs identity account or user, not %q", st.Identity)
			}
		}
		if st.RateKnob != "" {
			k := s.Knob(st.RateKnob)
			if k == nil {
				bad(fmt.Sprintf("streams[%d].rate_knob", i), "%q is not a knob", st.RateKnob)
			} else if _, hi, err := k.bounds(); err == nil && (k.Kind != "int" && k.Kind != "float" || hi > load.MaxRate) {
				bad(fmt.Sprintf("streams[%d].rate_knob", i), "%q: want an int or float knob of at most %d/s", st.RateKnob, load.MaxRate)
			}
		}
	}
	if _, err := load.Policy(s.Client.Retry, s.Client.Retries); err != nil {
		bad("client.retry", "%v", err)
	}
	for i, e := range s.Client.Expected {
		if e.Status < 400 || e.Status > 499 || e.Status == 429 || e.Meaning == "" {
			bad(fmt.Sprintf("client.expected[%d]", i), "want a 4xx status other than 429 (counted apart) and its meaning")
		}
	}
	if err := s.checkKnobs(); err != nil {
		errs = append(errs, err)
	}
	for i, k := range s.Knobs {
		if _, _, err := k.bounds(); err != nil {
			bad(fmt.Sprintf("knobs[%s]", k.Name), "%v", err)
			continue
		}
		if err := k.check(k.Default); err != nil {
			bad(fmt.Sprintf("knobs[%s].default", k.Name), "%v", err)
		}
		if slices.IndexFunc(s.Knobs[:i], func(o KnobSpec) bool { return o.Name == k.Name }) >= 0 {
			bad(fmt.Sprintf("knobs[%s]", k.Name), "listed twice")
		}
		if n := k.Needs; n != nil {
			other := s.Knob(n.Knob)
			switch {
			case other == nil || n.Knob == k.Name:
				bad(fmt.Sprintf("knobs[%s].needs.knob", k.Name), "%q: want another knob of the scenario", n.Knob)
			case len(n.Values) == 0:
				bad(fmt.Sprintf("knobs[%s].needs.values", k.Name), "want at least one value of %s", n.Knob)
			default:
				for _, v := range n.Values {
					if err := other.check(v); err != nil {
						bad(fmt.Sprintf("knobs[%s].needs.values", k.Name), "%v", err)
					}
				}
			}
		}
	}
	if len(s.Profiles) == 0 {
		bad("profiles", "at least one profile is required")
	}
	for _, p := range s.Profiles {
		phases := map[string]bool{"": true}
		for _, ph := range p.Phases {
			f := fmt.Sprintf("profiles[%s].phases[%s]", p.Name, ph.Name)
			if ph.Name == "" || phases[ph.Name] {
				bad(f, "every phase needs a name of its own")
			}
			phases[ph.Name] = true
			if ph.Duration <= 0 || ph.Settle < 0 || ph.Settle >= ph.Duration {
				bad(f, "duration must be positive and settle shorter than it")
			}
			if !(ph.Rate >= 0 && ph.Rate <= load.MaxRate && ph.To >= 0 && ph.To <= load.MaxRate) { // NaN fails too
				bad(f, "rates must be from 0 to %d/s", load.MaxRate)
			}
			for name, v := range ph.Knobs {
				k := s.Knob(name)
				if k == nil {
					bad(f+".knobs", "%q is not a knob of the scenario", name)
					continue
				}
				if err := k.check(v); err != nil {
					bad(f+".knobs."+name, "%v", err)
				}
			}
		}
		for _, e := range p.Expect {
			f := fmt.Sprintf("profiles[%s].expect[%s]", p.Name, e.Name)
			if e.Name == "" {
				bad(f, "every expectation needs a name")
			}
			if !slices.Contains([]string{"<", "<=", ">", ">=", "=="}, e.Op) {
				bad(f+".op", "%q: want < <= > >= ==", e.Op)
			}
			for _, m := range []*Measure{&e.Left, e.Right} {
				if m == nil {
					continue
				}
				if !phases[m.Phase] {
					bad(f, "phase %q is not a phase of the profile", m.Phase)
				}
				if !validMetric(m.Metric) {
					bad(f, "metric %q is unknown", m.Metric)
				}
				if m.Stream != "" && gatewayWide(m.Metric) {
					bad(f, "metric %q counts the gateway's decisions, which no stream has apart: drop stream %q", m.Metric, m.Stream)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// check reports whether v is an allowed value of the knob.
func (k KnobSpec) check(v string) error {
	switch k.Kind {
	case "bool":
		_, err := strconv.ParseBool(v)
		return err
	case "int", "float", "duration":
		n, err := k.number(v)
		if err != nil {
			return err
		}
		lo, hi, err := k.bounds()
		if err != nil {
			return err
		}
		if n < lo || n > hi {
			return fmt.Errorf("%q: want a value from %s to %s", v, cmp.Or(k.Min, "0"), cmp.Or(k.Max, knobCeilings[k.Kind]))
		}
		return nil
	case "enum":
		if !slices.Contains(k.Options, v) {
			return fmt.Errorf("%q: want one of %s", v, strings.Join(k.Options, ", "))
		}
		return nil
	default:
		return fmt.Errorf("knob %s: kind %q: want bool, int, float, duration or enum", k.Name, k.Kind)
	}
}

// knobCeilings are the largest values a numeric knob may take, whatever its scenario says:
// far above what any lesson needs, and low enough that no value floods the system (a rate
// of a million a second) or parks it (a service time of years). A float knob's ceiling is
// the load engine's highest rate, since a stream's rate knob is a float.
var knobCeilings = map[string]string{
	"int":      "100000",
	"float":    strconv.Itoa(load.MaxRate),
	"duration": "1m",
}

// bounds returns the knob's Min and Max as numbers (see number), checked against 0 and the
// kind's ceiling; both are 0 for a bool or enum knob.
func (k KnobSpec) bounds() (lo, hi float64, err error) {
	ceiling, numeric := knobCeilings[k.Kind]
	if !numeric {
		if k.Min != "" || k.Max != "" {
			return 0, 0, fmt.Errorf("min and max: only int, float and duration knobs take them, not %s", k.Kind)
		}
		return 0, 0, nil
	}
	top, _ := k.number(ceiling)
	if lo, err = k.number(cmp.Or(k.Min, "0")); err != nil {
		return 0, 0, fmt.Errorf("min: %w", err)
	}
	if hi, err = k.number(cmp.Or(k.Max, ceiling)); err != nil {
		return 0, 0, fmt.Errorf("max: %w", err)
	}
	if lo < 0 || hi < lo || hi > top {
		return 0, 0, fmt.Errorf("min %q, max %q: want 0 <= min <= max <= %s", k.Min, k.Max, ceiling)
	}
	return lo, hi, nil
}

// number reads v as a number of the knob's kind: an int, a finite float, or a duration in
// nanoseconds.
func (k KnobSpec) number(v string) (float64, error) {
	switch k.Kind {
	case "int":
		n, err := strconv.Atoi(v)
		return float64(n), err
	case "float":
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return 0, fmt.Errorf("%q: want a finite number", v)
		}
		return f, err
	case "duration":
		d, err := time.ParseDuration(v)
		return float64(d), err
	}
	return 0, fmt.Errorf("kind %q has no numbers", k.Kind)
}
