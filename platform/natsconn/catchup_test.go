package natsconn_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

// TestCatchUpWithoutAStream: with no stream to follow, one complete pass is made, after the
// failed ones, each reported, and Follow returns.
func TestCatchUpWithoutAStream(t *testing.T) {
	var passes atomic.Int32
	var mu sync.Mutex
	var reports []error
	c := &natsconn.CatchUp{
		Pass: func(context.Context) (int, error) {
			if passes.Add(1) < 3 {
				return 1, errors.New("source away")
			}
			return 7, nil
		},
		Source: "the source",
		Report: func(_ context.Context, applied int, err error) {
			mu.Lock()
			reports = append(reports, err)
			mu.Unlock()
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Follow(context.Background(), nil, "ORDERS", jetstream.ConsumerConfig{}, nil, natsconn.FollowOptions{})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Follow without a stream did not return after a complete pass")
	}
	mu.Lock()
	defer mu.Unlock()
	if got := passes.Load(); got != 3 || len(reports) != 3 || reports[0] == nil || reports[1] == nil || reports[2] != nil {
		t.Errorf("passes = %d, reports = %v; want 3 passes, two failed then one complete", got, reports)
	}
}

// TestCatchUpAfterEachSetUp: a pass follows the consumer's set-up, and another follows each
// set-up again (the consumer deleted and made anew), while the stream's events are handled.
func TestCatchUpAfterEachSetUp(t *testing.T) {
	js := testkit.JetStream(t, testkit.StartNATS(t).ClientURL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := natsconn.EnsureStream(ctx, js, "ORDERS", []string{"orders.>"}); err != nil {
		t.Fatal(err)
	}
	var passes, handled atomic.Int32
	c := &natsconn.CatchUp{Pass: func(context.Context) (int, error) { passes.Add(1); return 0, nil }, Source: "the source"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Follow(ctx, js, "ORDERS", jetstream.ConsumerConfig{Durable: "audit", AckPolicy: jetstream.AckExplicitPolicy},
			func(m jetstream.Msg) { handled.Add(1); _ = m.Ack() }, natsconn.FollowOptions{RetryEvery: 10 * time.Millisecond})
	}()
	testkit.Eventually(t, 10*time.Second, "a pass after the first set-up", func() bool { return passes.Load() == 1 })
	publish(t, js, "o-1")
	testkit.Eventually(t, 10*time.Second, "the stream's event handled", func() bool { return handled.Load() == 1 })

	if err := js.DeleteConsumer(ctx, "ORDERS", "audit"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "a pass after the consumer is set up again", func() bool { return passes.Load() == 2 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not return after ctx ended")
	}
}
