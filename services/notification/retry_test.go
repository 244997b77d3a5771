package notification

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

// flakyInbox is a real Store whose first failures Adds fail, as a database away would make
// them; the Add after them waits for release. It records when each Add was called.
type flakyInbox struct {
	*Store
	failures int
	release  chan struct{}

	mu    sync.Mutex
	calls []time.Time
	added int
}

func (f *flakyInbox) Add(ctx context.Context, m Message) (Message, bool, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	fail := len(f.calls) <= f.failures
	f.mu.Unlock()
	if fail {
		return Message{}, false, errors.New("database is away")
	}
	<-f.release
	m, added, err := f.Store.Add(ctx, m)
	if added {
		f.mu.Lock()
		f.added++
		f.mu.Unlock()
	}
	return m, added, err
}

func (f *flakyInbox) record() (calls []time.Time, added int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.calls...), f.added
}

// levels counts the JSON log lines in logs by level.
func levels(t *testing.T, logs string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec struct{ Level string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out[rec.Level]++
	}
	return out
}

// redelivered reads the gauge boxoffice.notification.events_redelivered of consumer.
func redelivered(t *testing.T, r sdkmetric.Reader, consumer string) (int64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "boxoffice.notification.events_redelivered" {
				continue
			}
			for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
				if v, ok := p.Attributes.Value("consumer"); ok && v.AsString() == consumer {
					return p.Value, true
				}
			}
		}
	}
	return 0, false
}

// An event whose store write keeps failing is retried after a back-off that doubles with
// each delivery up to MaxBackoff, logged at WARN while it grows and at ERROR once at the cap
// (not once per retry), counted by the gauge meanwhile, and stored once when the store is back.
func TestConsumerBacksOffAnEventItCannotStore(t *testing.T) {
	const (
		first, longest = 200 * time.Millisecond, 800 * time.Millisecond
		failures       = 4
	)
	wantDelays := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 800 * time.Millisecond}

	js := testkit.JetStream(t, testkit.StartNATS(t).ClientURL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := natsconn.EnsureStream(ctx, js, "ORDER", []string{"boxoffice.order.>"}); err != nil {
		t.Fatal(err)
	}
	flaky := &flakyInbox{Store: newTestStore(t, testkit.OpenDBs(t, "notification")[0]), failures: failures, release: make(chan struct{})}
	var logs testkit.Buffer
	reader := sdkmetric.NewManualReader()
	c := &Consumer{JS: js, Store: flaky, Log: slog.New(slog.NewJSONHandler(&logs, nil)),
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Sources:       Sources[:1], RetryEvery: 20 * time.Millisecond, AckWait: 10 * time.Second,
		Backoff: first, MaxBackoff: longest}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	publish(t, js, "boxoffice.order.order.confirmed", "a", orderEvent("ord_1.confirmed", "confirmed", "acc_1"))
	testkit.Eventually(t, 10*time.Second, "the delivery after the failures", func() bool {
		calls, _ := flaky.record()
		return len(calls) == failures+1
	})
	if got, ok := redelivered(t, reader, "notification-order"); got != 1 || !ok {
		t.Errorf("events_redelivered with the event in back-off = %d (reported %v), want 1", got, ok)
	}
	close(flaky.release)
	testkit.Eventually(t, 10*time.Second, "the event stored and acknowledged", func() bool {
		got, ok := redelivered(t, reader, "notification-order")
		return ok && got == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Consumer.Run = %v, want nil", err)
	}

	calls, added := flaky.record()
	if len(calls) != failures+1 || added != 1 {
		t.Errorf("store calls, messages added = %d, %d, want %d, 1", len(calls), added, failures+1)
	}
	if got := inbox(t, flaky.Store, "acc_1"); got["ord_1.confirmed"] != 1 || len(got) != 1 {
		t.Errorf("acc_1 inbox = %v, want ord_1.confirmed once", got)
	}
	// Each wait is at least its back-off, and shorter than the next doubling would be: the
	// waits grow, then stay at the cap. (The server never redelivers before the delay.)
	for i, want := range wantDelays {
		if i+1 >= len(calls) {
			break
		}
		if got := calls[i+1].Sub(calls[i]); got < want-10*time.Millisecond || got >= 2*want {
			t.Errorf("wait after delivery %d = %v, want at least %v and under %v", i+1, got, want, 2*want)
		}
	}
	// Deliveries 1 and 2 fail with the back-off still growing, 3 reaches the cap, 4 is quiet.
	if got := levels(t, logs.String()); got["WARN"] != 2 || got["ERROR"] != 1 {
		t.Errorf("log lines by level = %v, want WARN 2, ERROR 1", got)
	}

	cons, err := js.Consumer(context.Background(), "ORDER", "notification-order")
	if err != nil {
		t.Fatal(err)
	}
	if info := cons.CachedInfo(); info.NumAckPending != 0 || info.Delivered.Stream != 1 {
		t.Errorf("consumer ack pending, delivered = %d, %d, want 0, 1", info.NumAckPending, info.Delivered.Stream)
	}
}
