package load

import (
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Outcome classifies one attempt.
type Outcome int

// The outcomes, in the order the playground stacks them.
const (
	OK             Outcome = iota // 2xx
	TooMany                       // 429: a client's limit
	Unavailable                   // 503: overloaded for everyone
	ServerError                   // any other 5xx
	ClientError                   // any other 4xx
	Timeout                       // the client gave up waiting
	TransportError                // no response: refused, reset
	Dropped                       // never sent: the engine's in-flight bound was reached, or a pacing client gave up
)

// Classify maps a status code to its Outcome.
func Classify(status int) Outcome {
	switch {
	case status >= 200 && status < 300:
		return OK
	case status == 429:
		return TooMany
	case status == 503:
		return Unavailable
	case status >= 500:
		return ServerError
	}
	return ClientError
}

// Latencies are recorded in microseconds from 1µs to 2 minutes with two significant digits
// (1% error), which keeps each histogram a few tens of kilobytes.
const (
	minLatency = 1
	maxLatency = int64(2 * time.Minute / time.Microsecond)
	sigFigs    = 2
)

// Counts are one stream's numbers over one second (or, merged, over longer).
type Counts struct {
	Sent     int // attempts started
	Requests int // first attempts started: unique requests
	Outcomes [Dropped + 1]int
	// Goodput counts unique requests that ended in success.
	Goodput int
	// Accepted is the latency histogram of 2xx attempts, in microseconds; nil until one.
	Accepted *hdrhistogram.Histogram
}

// Quantile returns the q-th percentile (0..100) of accepted latency in milliseconds; 0 with
// no accepted attempt.
func (c *Counts) Quantile(q float64) float64 {
	if c.Accepted == nil || c.Accepted.TotalCount() == 0 {
		return 0
	}
	return float64(c.Accepted.ValueAtQuantile(q)) / 1000
}

// Add merges o into c.
func (c *Counts) Add(o *Counts) {
	c.Sent += o.Sent
	c.Requests += o.Requests
	c.Goodput += o.Goodput
	for i := range c.Outcomes {
		c.Outcomes[i] += o.Outcomes[i]
	}
	if o.Accepted != nil {
		if c.Accepted == nil {
			c.Accepted = hdrhistogram.New(minLatency, maxLatency, sigFigs)
		}
		c.Accepted.Merge(o.Accepted)
	}
}

// Second is everything recorded in one second of a run: per stream, and the scenario's own
// counters (added to) and gauges (set).
type Second struct {
	Streams  map[string]*Counts
	Counters map[string]float64
}

// Total merges every stream's counts.
func (s *Second) Total() *Counts {
	var t Counts
	for _, c := range s.Streams {
		t.Add(c)
	}
	return &t
}

// Recorder buckets what the engine (and a scenario's own code) observes into seconds since
// Start. It is safe for concurrent use. Attempts count in the second they started (Sent,
// Requests) or completed (outcomes, latency).
type Recorder struct {
	now   func() time.Time
	start time.Time

	mu      sync.Mutex
	seconds map[int]*Second
}

// NewRecorder returns a recorder whose second 0 starts at now(); nil now means time.Now.
func NewRecorder(now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{now: now, start: now(), seconds: map[int]*Second{}}
}

// Start is when second 0 began.
func (r *Recorder) Start() time.Time { return r.start }

// Elapsed is the time since Start.
func (r *Recorder) Elapsed() time.Duration { return r.now().Sub(r.start) }

// second returns the bucket of the current second, creating it. Callers hold mu.
func (r *Recorder) second() *Second {
	i := int(r.now().Sub(r.start) / time.Second)
	s := r.seconds[i]
	if s == nil {
		s = &Second{Streams: map[string]*Counts{}, Counters: map[string]float64{}}
		r.seconds[i] = s
	}
	return s
}

func (s *Second) stream(name string) *Counts {
	c := s.Streams[name]
	if c == nil {
		c = &Counts{}
		s.Streams[name] = c
	}
	return c
}

// Sent records an attempt starting; first marks a unique request's first attempt.
func (r *Recorder) Sent(stream string, first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.second().stream(stream)
	c.Sent++
	if first {
		c.Requests++
	}
}

// Done records an attempt's outcome and, for a 2xx, its latency.
func (r *Recorder) Done(stream string, o Outcome, latency time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.second().stream(stream)
	c.Outcomes[o]++
	if o == OK {
		if c.Accepted == nil {
			c.Accepted = hdrhistogram.New(minLatency, maxLatency, sigFigs)
		}
		_ = c.Accepted.RecordValue(min(max(latency.Microseconds(), minLatency), maxLatency))
	}
}

// Succeeded records a unique request that ended in success (goodput).
func (r *Recorder) Succeeded(stream string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.second().stream(stream).Goodput++
}

// Count adds delta to one of the scenario's counters in the current second.
func (r *Recorder) Count(name string, delta float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.second().Counters[name] += delta
}

// Gauge sets one of the scenario's gauges (a level, not a count) in the current second.
func (r *Recorder) Gauge(name string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.second().Counters[name] = v
}

// Second returns second i as recorded so far; an empty one if nothing happened in it. The
// caller must not change it while the run goes on.
func (r *Recorder) Second(i int) *Second {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seconds[i]
	if s == nil {
		return &Second{Streams: map[string]*Counts{}, Counters: map[string]float64{}}
	}
	cp := &Second{Streams: make(map[string]*Counts, len(s.Streams)), Counters: make(map[string]float64, len(s.Counters))}
	for k, c := range s.Streams {
		var d Counts
		d.Add(c)
		cp.Streams[k] = &d
	}
	for k, v := range s.Counters {
		cp.Counters[k] = v
	}
	return cp
}

// Seconds lists the indexes of the seconds with anything recorded, in order.
func (r *Recorder) Seconds() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, 0, len(r.seconds))
	for i := range r.seconds {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}
