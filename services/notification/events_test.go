package notification

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

func publish(t *testing.T, js jetstream.JetStream, subject, msgID, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte(payload)}, jetstream.WithMsgID(msgID)); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
}

func orderEvent(id, verb, account string) string {
	return fmt.Sprintf(`{"id":%q,"type":"order.%s","order":{"id":"ord","account":%q,"event_id":"evt-1","failure_reason":"r","amount":{"currency":"BRL","minor":100}}}`,
		id, verb, account)
}

// inbox counts account's messages by event id.
func inbox(t *testing.T, s *Store, account string) map[string]int {
	t.Helper()
	page, err := s.List(context.Background(), account, 100, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range page.Messages {
		out[m.EventID]++
	}
	return out
}

func TestConsumerMakesOneMessagePerEvent(t *testing.T) {
	js := testkit.JetStream(t, testkit.StartNATS(t).ClientURL())
	ctx := context.Background()
	if _, err := natsconn.EnsureStream(ctx, js, "ORDER", []string{"boxoffice.order.>"}); err != nil {
		t.Fatal(err)
	}
	store := newTestStore(t, testkit.OpenDBs(t, "notification")[0])
	start := func() (stop func()) {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		c := &Consumer{JS: js, Store: store, RetryEvery: 20 * time.Millisecond, AckWait: time.Second}
		go func() { done <- c.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Consumer.Run = %v, want nil", err)
			}
		}
	}
	stop := start()

	// The same event twice under two message ids gets past the stream's de-duplication, as a
	// relay resending after the duplicate window would; the inbox must still get it once.
	publish(t, js, "boxoffice.order.order.confirmed", "a", orderEvent("ord_1.confirmed", "confirmed", "acc_1"))
	publish(t, js, "boxoffice.order.order.confirmed", "a-again", orderEvent("ord_1.confirmed", "confirmed", "acc_1"))
	publish(t, js, "boxoffice.order.order.created", "b", orderEvent("ord_1.created", "created", "acc_1"))
	publish(t, js, "boxoffice.order.order.failed", "c", `not json`)
	publish(t, js, "boxoffice.order.order.failed", "d", orderEvent("ord_2.failed", "failed", "acc_1"))
	testkit.Eventually(t, 10*time.Second, "acc_1 has the confirmed and failed messages", func() bool {
		got := inbox(t, store, "acc_1")
		return got["ord_1.confirmed"] == 1 && got["ord_2.failed"] == 1
	})

	// The INVENTORY stream appears after the consumer started: its consumer finds it.
	if _, err := natsconn.EnsureStream(ctx, js, "INVENTORY", []string{"boxoffice.inventory.>"}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "boxoffice.inventory.hold.expired", "h1@expired",
		`{"id":"h1@expired","type":"inventory.hold.expired","hold":{"id":"h1","event_id":"evt-1","account":"acc_1","quantity":2,"expires_at":"2030-05-01T10:05:00Z"}}`)
	testkit.Eventually(t, 10*time.Second, "acc_1 has the hold-expired message", func() bool {
		return inbox(t, store, "acc_1")["h1@expired"] == 1
	})

	// Events published while the consumer is down arrive once it is back: the durable
	// consumer kept its place.
	stop()
	publish(t, js, "boxoffice.order.order.confirmed", "e", orderEvent("ord_3.confirmed", "confirmed", "acc_2"))
	stop = start()
	defer stop()
	testkit.Eventually(t, 10*time.Second, "acc_2 has the message published while the consumer was down", func() bool {
		return inbox(t, store, "acc_2")["ord_3.confirmed"] == 1
	})
	got := inbox(t, store, "acc_1")
	if len(got) != 3 || got["ord_1.confirmed"] != 1 {
		t.Errorf("acc_1 inbox = %v, want exactly ord_1.confirmed, ord_2.failed and h1@expired once each", got)
	}
}
