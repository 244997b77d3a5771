package natsconn_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

// follower runs natsconn.Follow on stream "orders" with durable "audit" and records what
// it receives.
type follower struct {
	mu         sync.Mutex
	got        []string
	subscribed atomic.Int32
	done       chan struct{}
}

func follow(t *testing.T, ctx context.Context, js jetstream.JetStream, handle func(jetstream.Msg)) *follower {
	t.Helper()
	f := &follower{done: make(chan struct{})}
	if handle == nil {
		handle = func(m jetstream.Msg) {
			f.mu.Lock()
			f.got = append(f.got, string(m.Data()))
			f.mu.Unlock()
			_ = m.Ack()
		}
	}
	go func() {
		defer close(f.done)
		natsconn.Follow(ctx, js, "ORDERS", jetstream.ConsumerConfig{Durable: "audit", AckPolicy: jetstream.AckExplicitPolicy},
			handle, natsconn.FollowOptions{RetryEvery: 10 * time.Millisecond, Subscribed: func() { f.subscribed.Add(1) }})
	}()
	return f
}

func (f *follower) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func publish(t *testing.T, js jetstream.JetStream, msg string) {
	t.Helper()
	if _, err := js.Publish(context.Background(), "orders.created", []byte(msg)); err != nil {
		t.Fatalf("publish %s: %v", msg, err)
	}
}

func TestFollowWaitsForTheStreamAndComesBackAfterTheConsumerGoes(t *testing.T) {
	js := testkit.JetStream(t, testkit.StartNATS(t).ClientURL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	f := follow(t, ctx, js, nil) // before the stream exists, as a consumer started before its producer
	if _, err := natsconn.EnsureStream(ctx, js, "ORDERS", []string{"orders.>"}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "first")
	testkit.Eventually(t, 10*time.Second, "the first event arrives once the stream exists", func() bool {
		return len(f.received()) == 1
	})

	// The consumer is deleted from under the follower (an operator, a stream recreated).
	if err := js.DeleteConsumer(ctx, "ORDERS", "audit"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the consumer is set up again", func() bool {
		return f.subscribed.Load() >= 2
	})
	publish(t, js, "second")
	testkit.Eventually(t, 10*time.Second, "events after the re-subscription arrive", func() bool {
		got := f.received()
		return len(got) >= 2 && got[len(got)-1] == "second"
	})

	cancel()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not return after its context ended")
	}
}

// Follow returns only once the message in hand is finished: a process stopping must not
// close its database under a handler.
func TestFollowLetsTheMessageInHandFinish(t *testing.T) {
	js := testkit.JetStream(t, testkit.StartNATS(t).ClientURL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := natsconn.EnsureStream(ctx, js, "ORDERS", []string{"orders.>"}); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	f := follow(t, ctx, js, func(m jetstream.Msg) {
		close(started)
		<-release
		finished.Store(true)
		_ = m.Ack()
	})
	publish(t, js, "slow")
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never started")
	}
	cancel()
	select {
	case <-f.done:
		t.Fatal("Follow returned while the handler was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not return after the handler finished")
	}
	if !finished.Load() {
		t.Error("Follow returned before the handler finished")
	}
}
