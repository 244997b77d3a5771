package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/clock"
)

// TestLatencyFromIntendedSendTime is coordinated omission on the engine's own side: the
// scheduler is held up once for 500ms (a GC pause, a starved CPU: in a one-machine
// playground the engine shares its cores with the system it measures), and the arrivals due
// in that time go out late. Their latency counts from when they were due, so the stall
// shows in the recorded latency; their service time, from the send, does not.
func TestLatencyFromIntendedSendTime(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	const stall = 500 * time.Millisecond
	var sleeps atomic.Int64
	e := &Engine{Sleep: func(ctx context.Context, d time.Duration) error {
		if sleeps.Add(1) == 10 {
			d += stall
		}
		return clock.Sleep(ctx, d)
	}}
	var (
		mu      sync.Mutex
		slowest Response
	)
	err := e.Run(context.Background(), time.Second, Stream{Name: "s", Rate: func(time.Duration) float64 { return 100 },
		Job: func(ctx context.Context, c *Client, n int64) {
			resp := c.Do(ctx, get(srv.URL))
			mu.Lock()
			defer mu.Unlock()
			if resp.Latency > slowest.Latency {
				slowest = *resp
			}
		}})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	var all Counts
	for _, i := range e.Recorder.Seconds() {
		all.Add(e.Recorder.Second(i).Total())
	}
	if got, want := all.Quantile(100), float64(stall.Milliseconds())*0.8; got < want {
		t.Errorf("recorded max latency after a %v stall of the scheduler = %.1fms, want at least %.0fms: latency counts from when an arrival was due", stall, got, want)
	}
	if slowest.Latency < stall*8/10 || slowest.ServiceTime > slowest.Latency-stall*6/10 {
		t.Errorf("slowest response: latency %v, service time %v; want a latency of about the %v stall and a service time without it", slowest.Latency, slowest.ServiceTime, stall)
	}
}
