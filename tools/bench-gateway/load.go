package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// maxRequests bounds any one run, whatever its rate and duration.
const maxRequests = 2_000_000

// result is one load run against one target.
type result struct {
	target   string
	load     string          // "1000/s", or "max (64 conns)"
	sent     int             // requests started
	ok       int             // answered 200
	elapsed  time.Duration   // from the first request to the last answer
	latency  []time.Duration // of every request, sorted
	cpu      time.Duration   // CPU time the proxy used in the run: its processes (nginx's workers too) and Redis
	cpuRedis time.Duration   // the part of cpu that was Redis's
	// paths counts the gateway's rule decisions in the run by how they were taken: "store"
	// (Redis) or "fallback" (Redis too slow or its breaker open); nil for other targets.
	paths map[string]float64
	// alongside is the run of direct calls interleaved with this one's requests, if any.
	alongside *result
	failures  map[string]int    // failed requests by kind: "429", "503", "timeout", "error"…
	firstErr  map[string]string // the first failure of each kind, to say what went wrong
}

// fail counts a failed request.
func (r *result) fail(err error) {
	if r.failures == nil {
		r.failures, r.firstErr = map[string]int{}, map[string]string{}
	}
	k := failureKind(err)
	if r.failures[k]++; r.failures[k] == 1 {
		r.firstErr[k] = err.Error()
	}
}

// statusError is an answer other than 200.
type statusError struct {
	code int
	head []byte // the start of the body
}

func (e *statusError) Error() string {
	return fmt.Sprintf("status %d %s", e.code, bytes.TrimSpace(e.head))
}

// failureKind sorts a failed request: by status for an answer, else a timeout (the
// client's, 5s) or another error (a refused or reset connection).
func failureKind(err error) string {
	var se *statusError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return strconv.Itoa(se.code)
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error"
}

// throughput is the rate of successful answers.
func (r result) throughput() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// quantile returns the q-quantile latency (nearest rank), 0 when nothing was measured.
func (r result) quantile(q float64) time.Duration {
	if len(r.latency) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(r.latency)))) - 1
	return r.latency[min(max(i, 0), len(r.latency)-1)]
}

// loader sends requests built by newRequest through one HTTP client. Time comes from now;
// pacing waits with sleep.
type loader struct {
	client     *http.Client
	newRequest func(ctx context.Context) *http.Request
	now        func() time.Time
	sleep      func(time.Duration)
}

func newLoader(newRequest func(ctx context.Context) *http.Request) *loader {
	return &loader{
		client: &http.Client{
			Timeout: 5 * time.Second,
			Transport: &http.Transport{
				MaxIdleConnsPerHost: 4096,
				IdleConnTimeout:     30 * time.Second,
				DisableCompression:  true,
			},
		},
		newRequest: newRequest,
		now:        time.Now,
		sleep:      time.Sleep,
	}
}

// getRequest builds GETs of url with header, which every request shares read-only.
func getRequest(url string, header http.Header) func(ctx context.Context) *http.Request {
	return func(ctx context.Context) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header = header
		return req
	}
}

// postRequest builds POSTs of body to url with header, which every request shares read-only.
func postRequest(url string, header http.Header, body []byte) func(ctx context.Context) *http.Request {
	return func(ctx context.Context) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header = header
		return req
	}
}

// open sends rate requests per second for d on a fixed schedule, whether or not earlier
// ones have been answered (an open model, as real users arrive). Each latency is counted
// from the moment its request was due, not from when it was sent: a target that stalls
// cannot hide its stall by slowing the load down (coordinated omission).
func (l *loader) open(ctx context.Context, rate int, d time.Duration) result {
	return openTogether(ctx, rate, d, []*loader{l}, []int{1})[0]
}

// openTogether runs the open model of open on several loaders at once, their requests
// interleaved on one schedule: loader j gets weights[j] of every sum(weights) requests, in
// turn, and the first loader gets rate requests per second. Each loader's result covers the
// same stretch of time, so a stall of the machine (another process, a hiccup of the host)
// hits them alike, and comparing their quantiles compares the targets rather than the
// moments they were measured. Time and pacing come from the first loader.
func openTogether(ctx context.Context, rate int, d time.Duration, ls []*loader, weights []int) []result {
	var slots []int // the loader of each request of one turn, e.g. [0 0 0 0 1] for weights 4, 1
	for j, w := range weights {
		for range w {
			slots = append(slots, j)
		}
	}
	clock := ls[0]
	total := float64(rate) * float64(len(slots)) / float64(weights[0]) // requests per second, all loaders
	n := min(int(total*d.Seconds()), maxRequests)
	latency := make([]time.Duration, n)
	errAt := make([]error, n)
	var wg sync.WaitGroup
	start := clock.now()
	for i := range n {
		if ctx.Err() != nil {
			n = i
			break
		}
		due := start.Add(time.Duration(float64(i) / total * float64(time.Second)))
		if wait := due.Sub(clock.now()); wait > 0 {
			clock.sleep(wait) // pacing to the schedule; a late request is sent at once
		}
		wg.Go(func() {
			errAt[i] = ls[slots[i%len(slots)]].send(ctx)
			latency[i] = clock.now().Sub(due)
		})
	}
	wg.Wait()
	elapsed := clock.now().Sub(start)
	out := make([]result, len(ls))
	for j := range out {
		out[j] = result{load: fmt.Sprintf("%d/s", rate*weights[j]/weights[0]), elapsed: elapsed}
	}
	for i := range n {
		r := &out[slots[i%len(slots)]]
		r.sent++
		r.latency = append(r.latency, latency[i])
		if errAt[i] == nil {
			r.ok++
		} else {
			r.fail(errAt[i])
		}
	}
	for j := range out {
		slices.Sort(out[j].latency)
	}
	return out
}

// closed keeps conns requests in flight for d, each worker sending its next request as soon
// as the last is answered: the most the target can serve on this machine.
func (l *loader) closed(ctx context.Context, conns int, d time.Duration) result {
	res := result{load: fmt.Sprintf("max (%d conns)", conns)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := l.now()
	deadline := start.Add(d)
	perWorker := maxRequests / conns
	for range conns {
		wg.Go(func() {
			var lat []time.Duration
			var errs []error
			ok := 0
			for len(lat) < perWorker && ctx.Err() == nil {
				t0 := l.now()
				if !t0.Before(deadline) {
					break
				}
				err := l.send(ctx)
				lat = append(lat, l.now().Sub(t0))
				if err == nil {
					ok++
				} else {
					errs = append(errs, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			res.latency = append(res.latency, lat...)
			res.ok += ok
			for _, err := range errs {
				res.fail(err)
			}
		})
	}
	wg.Wait()
	res.elapsed = l.now().Sub(start)
	res.sent = len(res.latency)
	slices.Sort(res.latency)
	return res
}

// settle waits until the target answers a request with 200, polling until within passes.
func (l *loader) settle(ctx context.Context, within time.Duration) error {
	deadline := l.now().Add(within)
	for {
		err := l.send(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if !l.now().Before(deadline) {
			return fmt.Errorf("no 200 within %v: %w", within, err)
		}
		l.sleep(50 * time.Millisecond) // poll interval
	}
}

// send makes one request and reads the whole answer; anything but a 200 is an error.
func (l *loader) send(ctx context.Context) error {
	res, err := l.client.Do(l.newRequest(ctx))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		// The start of the body says why (a problem+json names the violated policy).
		head, _ := io.ReadAll(io.LimitReader(res.Body, 300))
		return &statusError{code: res.StatusCode, head: head}
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return nil
}
