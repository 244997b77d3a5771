package waitroom

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// TestJoinNeedsAnOpenSale: a queue for an id nobody opened would be listed for the admitter
// of every replica to visit on every tick, so joining it is refused before anything is
// written; fans already in a queue keep their places once its sale closes.
func TestJoinNeedsAnOpenSale(t *testing.T) {
	ctx := context.Background()
	rdb := testkit.StartRedis(t).Client()
	q := newQueue(rdb, testkit.NewClock(time.Unix(1_800_000_000, 0), 0))
	openSales(t, q, "evt-flash")
	if err := q.SetRate(ctx, "evt-admin", 5); err != nil { // an admin's rate opens the sale too
		t.Fatal(err)
	}
	join(t, q, "evt-flash", "acc-a")

	for i := range 100 { // what a bot makes up
		event := fmt.Sprintf("no-such-event-%d", i)
		_, err := q.Join(ctx, event, "bot")
		if problem.CodeOf(err) != problem.NotFound || err == nil || !strings.Contains(err.Error(), "no waiting room for event "+event) {
			t.Fatalf("Join(%s) = %v, want NotFound: no waiting room for event %s", event, err, event)
		}
	}
	if listed := rdb.SMembers(ctx, eventsKey).Val(); len(listed) != 1 || listed[0] != "evt-flash" {
		t.Errorf("wr:events = %v after joins of made-up events, want [evt-flash]", listed)
	}
	if keys := rdb.Keys(ctx, "wr:{no-such-event-*").Val(); len(keys) != 0 {
		t.Errorf("keys of made-up events = %v, want none", keys)
	}
	if st := join(t, q, "evt-admin", "acc-a"); st.State != Waiting || st.Position != 1 {
		t.Errorf("Join(evt-admin) after PUT settings = %+v, want waiting at 1", st)
	}

	rdb.Del(ctx, keysFor("evt-flash").sale) // the sale closes (its registration expired)
	if st := join(t, q, "evt-flash", "acc-a"); st.State != Waiting || st.Position != 1 {
		t.Errorf("Join(evt-flash, acc-a) again after the sale closed = %+v, want waiting at 1", st)
	}
	if _, err := q.Join(ctx, "evt-flash", "acc-new"); problem.CodeOf(err) != problem.NotFound {
		t.Errorf("Join(evt-flash, acc-new) after the sale closed = %v, want NotFound", err)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	rdb := testkit.StartRedis(t).Client()
	clk := testkit.NewClock(time.Unix(1_800_000_000, 0), 0)
	q := newQueue(rdb, clk)
	q.QueueTTL = time.Hour
	tests := []struct {
		name     string
		already  time.Duration // how long the sale was open for before; 0 = closed
		until    time.Time
		wantOpen bool
		wantTTL  time.Duration // 0 = no key
	}{
		{"for the queue TTL", 0, time.Time{}, true, time.Hour},
		{"until a time", 0, clk.Now().Add(48 * time.Hour), true, 48 * time.Hour},
		{"until a time past", 0, clk.Now().Add(-time.Minute), false, 0},
		{"longer than it was", time.Hour, clk.Now().Add(3 * time.Hour), true, 3 * time.Hour},
		{"never shorter", 3 * time.Hour, clk.Now().Add(time.Hour), true, 3 * time.Hour},
		{"past while open", time.Hour, clk.Now().Add(-time.Minute), true, time.Hour},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := fmt.Sprintf("evt-%d", i)
			key := keysFor(event).sale
			if tt.already > 0 {
				rdb.Set(ctx, key, "1", tt.already)
			}
			open, err := q.Open(ctx, event, tt.until)
			if err != nil || open != tt.wantOpen {
				t.Fatalf("Open(%s, %v) = %v, %v, want %v", event, tt.until, open, err, tt.wantOpen)
			}
			// The injected clock stands still, so Redis's own countdown is all that passed.
			ttl := rdb.PTTL(ctx, key).Val()
			if tt.wantTTL == 0 && ttl != -2 || tt.wantTTL > 0 && (ttl <= tt.wantTTL-5*time.Second || ttl > tt.wantTTL) {
				t.Errorf("PTTL(%s) = %v, want %v", key, ttl, tt.wantTTL)
			}
		})
	}
	t.Run("a join keeps a short sale open", func(t *testing.T) {
		key := keysFor("evt-short").sale
		rdb.Set(ctx, key, "1", time.Minute)
		join(t, q, "evt-short", "acc-a")
		if ttl := rdb.TTL(ctx, key).Val(); ttl <= time.Hour-5*time.Second || ttl > time.Hour {
			t.Errorf("TTL(%s) after a join = %v, want the queue TTL %v", key, ttl, time.Hour)
		}
	})
	t.Run("bad event id", func(t *testing.T) {
		if _, err := q.Open(ctx, "evt}{", time.Time{}); problem.CodeOf(err) != problem.Invalid {
			t.Errorf("Open(evt}{) = %v, want Invalid", err)
		}
	})
}

// TestAdmitAllVisitsABoundedTurn: however many events are listed, one tick visits at most
// MaxEventsPerTick of them, and successive ticks take them all in turns.
func TestAdmitAllVisitsABoundedTurn(t *testing.T) {
	ctx := context.Background()
	q := newQueue(testkit.StartRedis(t).Client(), testkit.NewClock(time.Unix(1_800_000_000, 0), 0))
	q.MaxEventsPerTick = 3
	const events = 8
	for i := range events {
		event := fmt.Sprintf("evt-%d", i)
		openSales(t, q, event)
		join(t, q, event, "acc-a") // one fan each: a visit admits exactly one
	}
	admitted := 0
	for tick := range 3 {
		n, err := q.AdmitAll(ctx)
		if err != nil || n != min(q.MaxEventsPerTick, events-admitted) {
			t.Fatalf("AdmitAll, tick %d = %d, %v, want %d", tick, n, err, min(q.MaxEventsPerTick, events-admitted))
		}
		admitted += n
	}
	for i := range events {
		if st, err := q.Status(ctx, fmt.Sprintf("evt-%d", i), "acc-a"); err != nil || st.State != Admitted {
			t.Errorf("Status(evt-%d, acc-a) after three ticks = %+v, %v, want admitted: every event gets its turn", i, st, err)
		}
	}
}

// TestSaleFollowerOpensTheCatalogsFlashSales: the catalog's flash sales become joinable as
// its changes arrive; other events, and a sale whose show is long over, do not.
func TestSaleFollowerOpensTheCatalogsFlashSales(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := testkit.StartRedis(t).Client()
	q := newQueue(rdb, nil) // Redis TIME: the events' start times are real times
	srv := testkit.StartNATS(t)
	js := testkit.JetStream(t, srv.ClientURL())
	if _, err := natsconn.EnsureStream(ctx, js, CatalogStream, []string{catalogEventSubjects}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	publish := func(payload []byte) {
		t.Helper()
		if _, err := js.Publish(ctx, "boxoffice.catalog.event.created", payload); err != nil {
			t.Fatal(err)
		}
	}
	change := func(id string, flash bool, startsAt time.Time) []byte {
		t.Helper()
		e := &catalogv1.Event{Id: id, Title: id, FlashSale: flash, StartsAt: timestamppb.New(startsAt)}
		b, err := protojson.Marshal(&catalogv1.EventChange{Id: id + "@v1", Type: "catalog.event.created", Event: e})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	publish(change("evt-plain", false, now.Add(24*time.Hour)))
	publish(change("evt-over", true, now.Add(-DefaultQueueTTL-time.Hour)))
	publish([]byte("not a change"))
	publish(change("evt-sale", true, now.Add(24*time.Hour)))

	done := make(chan error, 1)
	follower := &SaleFollower{JS: js, Catalog: catalogClient(t), Queue: q, RetryEvery: 50 * time.Millisecond}
	go func() { done <- follower.Run(ctx) }()
	testkit.Eventually(t, 10*time.Second, "evt-sale open", func() bool {
		return rdb.Exists(ctx, keysFor("evt-sale").sale).Val() == 1
	})
	if st := join(t, q, "evt-sale", "acc-a"); st.State != Waiting || st.Position != 1 {
		t.Errorf("Join(evt-sale) = %+v, want waiting at 1", st)
	}
	// The sale lasts until the queue TTL after the show starts.
	want := 24*time.Hour + DefaultQueueTTL
	if ttl := rdb.PTTL(ctx, keysFor("evt-sale").sale).Val(); ttl <= want-time.Minute || ttl > want {
		t.Errorf("PTTL of evt-sale's sale = %v, want about %v", ttl, want)
	}
	// Changes arrive in order: evt-sale's came last, so the others were handled before it.
	for _, event := range []string{"evt-plain", "evt-over"} {
		if _, err := q.Join(ctx, event, "acc-a"); problem.CodeOf(err) != problem.NotFound {
			t.Errorf("Join(%s) = %v, want NotFound", event, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil at shutdown", err)
	}
}
