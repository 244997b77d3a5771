package load

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestPacingClientStopsBeforeThe429 offers 40 requests a second to a server that allows 20
// a second (a bucket of burst 5, which says so in RateLimit fields, as the gateway does).
// The pacing clients meet no 429 and are served at the server's rate; what they could not
// send within the engine's timeout they give up before sending. Clients that do not pace
// are served as much, and refused the rest.
func TestPacingClientStopsBeforeThe429(t *testing.T) {
	for _, tt := range []struct {
		policy                 string
		maxTooMany, minTooMany int
		pacedOut               bool
	}{
		{PolicyPace, 0, 0, true},
		{PolicyNone, math.MaxInt, 25, false},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			srv := httptest.NewServer(&wallBucket{rate: 20, burst: 5})
			defer srv.Close()
			b, err := Policy(tt.policy, 0)
			if err != nil {
				t.Fatal(err)
			}
			const d = 2 * time.Second
			e := &Engine{Timeout: 300 * time.Millisecond}
			err = e.Run(context.Background(), d, Stream{
				Name: "s", Rate: func(time.Duration) float64 { return 40 },
				Behaviour: func() Behaviour { return b },
				Job:       func(ctx context.Context, c *Client, n int64) { c.Do(ctx, get(srv.URL)) },
			})
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			var total Counts
			var pacedOut float64
			for _, i := range e.Recorder.Seconds() {
				s := e.Recorder.Second(i)
				total.Add(s.Total())
				pacedOut += s.Counters[CounterPacedOut]
			}
			t.Logf("%s: goodput %d, 429s %d, paced out %.0f", tt.policy, total.Goodput, total.Outcomes[TooMany], pacedOut)
			if got := total.Outcomes[TooMany]; got > tt.maxTooMany || got < tt.minTooMany {
				t.Errorf("429s = %d, want %d to %d", got, tt.minTooMany, tt.maxTooMany)
			}
			// The burst, then 20/s for the run, and a few more for the paced requests still
			// waiting when the schedule ends (each waits up to the 300ms timeout).
			if want := 5 + 20*d.Seconds(); float64(total.Goodput) < 0.85*want || float64(total.Goodput) > 1.2*want {
				t.Errorf("goodput = %d, want about %.0f (the server's rate)", total.Goodput, want)
			}
			if (pacedOut > 0) != tt.pacedOut || float64(total.Outcomes[Dropped]) != pacedOut {
				t.Errorf("paced out = %.0f, dropped = %d; want paced out %v, and each one dropped", pacedOut, total.Outcomes[Dropped], tt.pacedOut)
			}
		})
	}
}

// wallBucket is a token bucket on the wall clock that answers as the gateway does: the
// RateLimit fields on every answer, 429 and Retry-After when empty.
type wallBucket struct {
	rate, burst float64

	mu     sync.Mutex
	tokens float64
	at     time.Time
}

func (b *wallBucket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	now := time.Now()
	if b.at.IsZero() {
		b.tokens = b.burst
	}
	b.tokens = min(b.burst, b.tokens+b.rate*now.Sub(b.at).Seconds())
	b.at = now
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	left := b.tokens
	b.mu.Unlock()
	w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"bucket";q=%.0f;w=1`, b.rate))
	if !ok {
		w.Header().Set("RateLimit", `"bucket";r=0;t=1`)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	w.Header().Set("RateLimit", fmt.Sprintf(`"bucket";r=%d;t=1`, int(left)))
}
