package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"boxoffice.dev/playground/load"
)

// Tally is what happened to a run's attempts over some time: how many were sent, what they
// were answered, and how fast the accepted ones were.
type Tally struct {
	// Sent counts attempts (retries included); Requests counts unique requests (first
	// attempts).
	Sent     int `json:"sent"`
	Requests int `json:"requests"`
	// The outcomes of the attempts.
	OK           int `json:"ok"`            // 2xx
	TooMany      int `json:"too_many"`      // 429
	Unavailable  int `json:"unavailable"`   // 503
	ServerErrors int `json:"server_errors"` // other 5xx
	ClientErrors int `json:"client_errors"` // other 4xx: refusals, often ones the scenario expects (ClientSpec.Expected)
	Errors       int `json:"errors"`        // transport errors and dropped arrivals: no answer at all
	Timeouts     int `json:"timeouts"`      // the client gave up
	// Goodput counts unique requests that ended in success.
	Goodput int `json:"goodput"`
	// Latency percentiles of accepted (2xx) attempts, in milliseconds; 0 with none.
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// tally reads the engine's counts.
func tally(c *load.Counts) Tally {
	return Tally{
		Sent: c.Sent, Requests: c.Requests,
		OK: c.Outcomes[load.OK], TooMany: c.Outcomes[load.TooMany], Unavailable: c.Outcomes[load.Unavailable],
		ServerErrors: c.Outcomes[load.ServerError],
		ClientErrors: c.Outcomes[load.ClientError],
		Errors:       c.Outcomes[load.TransportError] + c.Outcomes[load.Dropped],
		Timeouts:     c.Outcomes[load.Timeout],
		Goodput:      c.Goodput,
		P50:          c.Quantile(50), P95: c.Quantile(95), P99: c.Quantile(99),
	}
}

// Stats summarises a phase (its settle time left out), or the whole run (Phase ""), over
// every stream; Streams holds the same numbers per stream.
type Stats struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
	Tally
	// Streams holds the same numbers per stream.
	Streams map[string]*Stats `json:"streams,omitempty"`
	// Counters are the scenario's own counters: counts summed over the phase, gauges
	// (CounterSpec.Kind) at their last value in it.
	Counters map[string]float64 `json:"counters,omitempty"`
	// Decisions are the gateway's rate-limit decisions by path, summed over the phase; the
	// gateway's, so a stream's Stats have none.
	Decisions map[string]float64 `json:"decisions,omitempty"`
}

// metrics are the numbers a Measure may name, computed from a Stats. "counter:<name>" names
// one of Stats.Counters.
var metrics = map[string]func(s *Stats) float64{
	"sent":          func(s *Stats) float64 { return float64(s.Sent) },
	"requests":      func(s *Stats) float64 { return float64(s.Requests) },
	"ok":            func(s *Stats) float64 { return float64(s.OK) },
	"too_many":      func(s *Stats) float64 { return float64(s.TooMany) },
	"unavailable":   func(s *Stats) float64 { return float64(s.Unavailable) },
	"server_errors": func(s *Stats) float64 { return float64(s.ServerErrors) },
	"client_errors": func(s *Stats) float64 { return float64(s.ClientErrors) },
	"errors":        func(s *Stats) float64 { return float64(s.Errors) },
	"timeouts":      func(s *Stats) float64 { return float64(s.Timeouts) },
	"goodput":       func(s *Stats) float64 { return float64(s.Goodput) },
	"p50":           func(s *Stats) float64 { return s.P50 },
	"p95":           func(s *Stats) float64 { return s.P95 },
	"p99":           func(s *Stats) float64 { return s.P99 },
	// amplification is attempts per unique request: 1 without retries.
	"amplification": func(s *Stats) float64 { return ratio(float64(s.Sent), float64(s.Requests)) },
	// success_ratio is the share of unique requests that ended in success.
	"success_ratio": func(s *Stats) float64 { return ratio(float64(s.Goodput), float64(s.Requests)) },
	// The shares of completed attempts that were refused: 429s, and 503/5xx/timeouts.
	"too_many_ratio": func(s *Stats) float64 { return ratio(float64(s.TooMany), float64(s.completed())) },
	"failed_ratio": func(s *Stats) float64 {
		return ratio(float64(s.Unavailable+s.ServerErrors+s.Timeouts), float64(s.completed()))
	},
	// Per-second rates over the phase.
	"sent_per_second":    func(s *Stats) float64 { return ratio(float64(s.Sent), s.Seconds) },
	"goodput_per_second": func(s *Stats) float64 { return ratio(float64(s.Goodput), s.Seconds) },
	// The share of the gateway's rate-limit decisions taken without the store (fallback,
	// fail_closed).
	"without_store_ratio": func(s *Stats) float64 { return WithoutStore(s.Decisions) },
}

// The prefixed metrics: "counter:<name>" is one of Stats.Counters; "decisions:<path>" the
// gateway's decisions by that path, and "decisions_ratio:<path>" their share of all its
// decisions.
const (
	prefixCounter        = "counter:"
	prefixDecisions      = "decisions:"
	prefixDecisionsRatio = "decisions_ratio:"
)

// prefixed reads a prefixed metric; ok is false for any other name.
func prefixed(name string, s *Stats) (v float64, ok bool) {
	if c, found := strings.CutPrefix(name, prefixCounter); found {
		return s.Counters[c], true
	}
	if p, found := strings.CutPrefix(name, prefixDecisions); found {
		return s.Decisions[p], true
	}
	if p, found := strings.CutPrefix(name, prefixDecisionsRatio); found {
		var all float64
		for _, n := range s.Decisions {
			all += n
		}
		return ratio(s.Decisions[p], all), true
	}
	return 0, false
}

// gatewayWide reports whether a metric counts the gateway's decisions, which no stream has
// apart from the others.
func gatewayWide(name string) bool {
	return name == "without_store_ratio" || strings.HasPrefix(name, prefixDecisions) || strings.HasPrefix(name, prefixDecisionsRatio)
}

func (s *Stats) completed() int {
	return s.OK + s.TooMany + s.Unavailable + s.ServerErrors + s.ClientErrors + s.Errors + s.Timeouts
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// validMetric reports whether name is a metric of Stats, or a prefixed one with a name after
// its prefix.
func validMetric(name string) bool {
	if _, ok := metrics[name]; ok {
		return true
	}
	for _, p := range []string{prefixCounter, prefixDecisions, prefixDecisionsRatio} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return rest != ""
		}
	}
	return false
}

// accumulator sums seconds into Stats.
type accumulator struct {
	total     load.Counts
	streams   map[string]*load.Counts
	counters  map[string]float64
	decisions map[string]float64
}

func (a *accumulator) add(sec *load.Second, counters, decisions map[string]float64, gauges map[string]bool) {
	if a.streams == nil {
		a.streams = map[string]*load.Counts{}
		a.counters = map[string]float64{}
		a.decisions = map[string]float64{}
	}
	for path, n := range decisions {
		a.decisions[path] += n
	}
	for name, c := range sec.Streams {
		a.total.Add(c)
		s := a.streams[name]
		if s == nil {
			s = &load.Counts{}
			a.streams[name] = s
		}
		s.Add(c)
	}
	for k, v := range counters {
		if gauges[k] {
			a.counters[k] = v
		} else {
			a.counters[k] += v
		}
	}
}

func (a *accumulator) stats(phase string, seconds int) *Stats {
	s := fromCounts(&a.total, phase, seconds)
	if len(a.counters) > 0 {
		s.Counters = a.counters
	}
	if len(a.decisions) > 0 {
		s.Decisions = a.decisions
	}
	if len(a.streams) > 1 {
		s.Streams = map[string]*Stats{}
		for name, c := range a.streams {
			s.Streams[name] = fromCounts(c, phase, seconds)
		}
	}
	return s
}

func fromCounts(c *load.Counts, phase string, seconds int) *Stats {
	return &Stats{Phase: phase, Seconds: float64(seconds), Tally: tally(c)}
}

// check evaluates expectations against the phases' and the run's statistics.
func check(expect []Expectation, phases map[string]*Stats, totals *Stats) []Outcome {
	out := make([]Outcome, 0, len(expect))
	for _, e := range expect {
		left, err := measure(e.Left, phases, totals)
		if err != nil {
			out = append(out, Outcome{Name: e.Name, Want: e.Op, Got: err.Error()})
			continue
		}
		want := e.Value
		wantText := format(e.Value)
		if e.Right != nil {
			right, err := measure(*e.Right, phases, totals)
			if err != nil {
				out = append(out, Outcome{Name: e.Name, Want: e.Op, Got: err.Error()})
				continue
			}
			f := e.Factor
			if f == 0 {
				f = 1
			}
			want = f * right
			wantText = fmt.Sprintf("%s = %s", describe(*e.Right), format(right))
			if f != 1 {
				wantText = fmt.Sprintf("%s × %s = %s × %s = %s", format(f), describe(*e.Right), format(f), format(right), format(want))
			}
		}
		out = append(out, Outcome{
			Name:   e.Name,
			Want:   fmt.Sprintf("%s %s %s", describe(e.Left), e.Op, wantText),
			Got:    fmt.Sprintf("%s = %s", describe(e.Left), format(left)),
			Passed: compare(left, e.Op, want),
		})
	}
	return out
}

func measure(m Measure, phases map[string]*Stats, totals *Stats) (float64, error) {
	s := totals
	if m.Phase != "" {
		s = phases[m.Phase]
		if s == nil {
			return 0, fmt.Errorf("no phase %q", m.Phase)
		}
	}
	if m.Stream != "" {
		st := s.Streams[m.Stream]
		if st == nil {
			return 0, fmt.Errorf("no traffic from stream %q in %s", m.Stream, describe(m))
		}
		s = st
	}
	if v, ok := prefixed(m.Metric, s); ok {
		return v, nil
	}
	f := metrics[m.Metric]
	if f == nil {
		return 0, fmt.Errorf("no metric %q", m.Metric)
	}
	return f(s), nil
}

// describe names a measure for people: p99(spike-limited), too_many_ratio(noisy@shared).
func describe(m Measure) string {
	where := m.Phase
	if where == "" {
		where = "run"
	}
	if m.Stream != "" {
		where = m.Stream + "@" + where
	}
	return fmt.Sprintf("%s(%s)", strings.TrimPrefix(m.Metric, "counter:"), where)
}

// format writes v as a person reads it: whole numbers whole, others to three significant
// digits without an exponent.
func format(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return fmt.Sprintf("%d", int64(v))
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2-int(math.Log10(math.Abs(v))), 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "==":
		return a == b
	}
	return false
}
