package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

const stream = "OUTBOXTEST"

// setup returns a database with the outbox table and a JetStream with a stream over
// boxoffice.test.>.
func setup(t *testing.T, db *sqldb.DB) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	if err := outbox.EnsureTable(t.Context(), db); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	return setupOn(t, db, testkit.StartNATS(t).ClientURL()) // EnsureTable a second time
}

// add commits (or rolls back) one transaction adding events with the given ids.
func add(t *testing.T, ctx context.Context, db *sqldb.DB, commit bool, ids ...string) {
	t.Helper()
	if err := write(ctx, db, commit, ids...); err != nil {
		t.Fatal(err)
	}
}

// write is add for goroutines other than the test's, which must not call t.Fatal.
func write(ctx context.Context, db *sqldb.DB, commit bool, ids ...string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for _, id := range ids {
		ev := outbox.Event{ID: id, Subject: "boxoffice.test.thing.created", Payload: []byte(`{"id":"` + id + `"}`)}
		if err := outbox.Add(ctx, tx, db, ev); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("Add(%s): %w", id, err)
		}
	}
	if !commit {
		return tx.Rollback()
	}
	return tx.Commit()
}

// streamIDs returns the Nats-Msg-Id of every message in the stream, in stream order.
func streamIDs(t *testing.T, s jetstream.Stream) []string {
	t.Helper()
	ctx := t.Context()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	var ids []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get msg %d: %v", seq, err)
		}
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	return ids
}

func msgCount(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.State.Msgs
}

// pending counts rows not yet marked published.
func pending(t *testing.T, db *sqldb.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&n); err != nil {
		t.Fatalf("count pending: %v", err)
	}
	return n
}

// run starts relay and stops it when the test ends, failing the test if Run errs.
func run(t *testing.T, relay *outbox.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Relay.Run() = %v, want nil", err)
		}
	})
}

func TestRelayPublishesCommittedEventsOnly(t *testing.T) {
	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		js, s := setup(t, db)
		add(t, ctx, db, true, "ev-1", "ev-2")
		add(t, ctx, db, false, "rolled-back-1")
		add(t, ctx, db, true, "ev-3")
		add(t, ctx, db, false, "rolled-back-2")

		relay := &outbox.Relay{DB: db, JS: js, Interval: time.Hour} // only Notify wakes it after the first pass
		run(t, relay)
		testkit.Eventually(t, 5*time.Second, "3 events in the stream", func() bool { return msgCount(t, s) >= 3 })
		add(t, ctx, db, true, "ev-4")
		relay.Notify()
		testkit.Eventually(t, 5*time.Second, "the notified event in the stream", func() bool { return msgCount(t, s) >= 4 })
		testkit.Eventually(t, 5*time.Second, "no pending rows", func() bool { return pending(t, db) == 0 })

		want := []string{"ev-1", "ev-2", "ev-3", "ev-4"}
		if got := streamIDs(t, s); !slices.Equal(got, want) {
			t.Errorf("stream ids = %v, want %v", got, want)
		}
		m, err := s.GetMsg(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != "boxoffice.test.thing.created" || string(m.Data) != `{"id":"ev-1"}` {
			t.Errorf("first message = %s %s, want boxoffice.test.thing.created {\"id\":\"ev-1\"}", m.Subject, m.Data)
		}
	})
}

func TestAddRejectsIncompleteEvents(t *testing.T) {
	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		if err := outbox.EnsureTable(t.Context(), db); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			ev   outbox.Event
		}{
			{"no id", outbox.Event{Subject: "boxoffice.test.a.b"}},
			{"no subject", outbox.Event{ID: "x"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tx, err := db.BeginTx(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if err := outbox.Add(t.Context(), tx, db, tt.ev); err == nil {
					t.Errorf("Add(%+v) = nil, want an error", tt.ev)
				}
			})
		}
	})
}

// Add refuses a payload NATS would refuse (its default max_payload is 1 MiB), before the
// row can hold back the events after it; up to MaxPayload is accepted.
func TestAddLimitsPayload(t *testing.T) {
	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		if err := outbox.EnsureTable(t.Context(), db); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name     string
			size     int
			tooLarge bool
		}{
			{"at MaxPayload", outbox.MaxPayload, false},
			{"one byte over", outbox.MaxPayload + 1, true},
			{"over NATS's default max_payload", 2 << 20, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tx, err := db.BeginTx(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				ev := outbox.Event{ID: "big", Subject: "boxoffice.test.a.b", Payload: make([]byte, tt.size)}
				err = outbox.Add(t.Context(), tx, db, ev)
				if got := errors.Is(err, outbox.ErrTooLarge); got != tt.tooLarge {
					t.Fatalf("Add(%d bytes) = %v, want ErrTooLarge %v", tt.size, err, tt.tooLarge)
				}
				if tt.tooLarge && !strings.Contains(err.Error(), "MaxPayload") {
					t.Errorf("Add(%d bytes) = %q, want it to name MaxPayload", tt.size, err)
				}
			})
		}
	})
}

// Two relays over one outbox while writers keep committing: every event reaches the stream
// exactly once, in the outbox's order.
func TestTwoRelaysPublishEachEventOnceInOrder(t *testing.T) {
	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		js, s := setup(t, db)
		var published atomic.Int64
		counting := countingPublisher{js, &published}
		a := &outbox.Relay{DB: db, JS: counting, Interval: 5 * time.Millisecond, Batch: 7}
		b := &outbox.Relay{DB: db, JS: counting, Interval: 5 * time.Millisecond, Batch: 7}
		run(t, a)
		run(t, b)

		const writers, perWriter = 4, 25
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					if err := write(ctx, db, true, fmt.Sprintf("w%d-%03d", w, i)); err != nil {
						t.Error(err)
						return
					}
					a.Notify()
					b.Notify()
				}
			})
		}
		wg.Wait()
		const total = writers * perWriter
		testkit.Eventually(t, 10*time.Second, "every event in the stream", func() bool { return msgCount(t, s) >= total })
		testkit.Eventually(t, 5*time.Second, "no pending rows", func() bool { return pending(t, db) == 0 })

		want := outboxOrder(t, db)
		got := streamIDs(t, s)
		if len(got) != total || !slices.Equal(got, want) {
			t.Errorf("stream ids (%d) = %v,\nwant outbox order (%d) %v", len(got), got, len(want), want)
		}
		t.Logf("%d publish calls for %d events", published.Load(), total)
	})
}

// countingPublisher counts publish calls, to show how many duplicates the stream absorbed.
type countingPublisher struct {
	jetstream.JetStream
	n *atomic.Int64
}

func (c countingPublisher) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	c.n.Add(1)
	return c.JetStream.PublishMsg(ctx, m, opts...)
}

func outboxOrder(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT id FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestRelayCarriesTraceContext(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })

	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		js, s := setup(t, db)
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
			SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
			TraceFlags: trace.FlagsSampled,
		})
		ctx := trace.ContextWithSpanContext(t.Context(), sc)
		add(t, ctx, db, true, "traced")
		run(t, &outbox.Relay{DB: db, JS: js})
		testkit.Eventually(t, 5*time.Second, "the event in the stream", func() bool { return msgCount(t, s) == 1 })

		m, err := s.GetMsg(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		got := trace.SpanContextFromContext(natsconn.ExtractTrace(context.Background(), nats.Header(m.Header)))
		if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() {
			t.Errorf("extracted trace %s/%s, want %s/%s", got.TraceID(), got.SpanID(), sc.TraceID(), sc.SpanID())
		}
	})
}

func TestRelayPrunesOldPublishedRows(t *testing.T) {
	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		js, s := setup(t, db)
		var now atomic.Int64
		now.Store(time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
		clock := func() time.Time { return time.UnixMilli(now.Load()) }
		add(t, t.Context(), db, true, "old")
		relay := &outbox.Relay{DB: db, JS: js, Clock: clock, Interval: 5 * time.Millisecond}
		run(t, relay)
		testkit.Eventually(t, 5*time.Second, "old published", func() bool { return pending(t, db) == 0 && msgCount(t, s) == 1 })

		now.Add((outbox.Retention - time.Minute).Milliseconds())
		add(t, t.Context(), db, true, "new")
		testkit.Eventually(t, 5*time.Second, "new published", func() bool { return pending(t, db) == 0 && msgCount(t, s) == 2 })
		if got := outboxOrder(t, db); !slices.Equal(got, []string{"old", "new"}) {
			t.Fatalf("rows within retention = %v, want [old new]", got)
		}

		now.Add((2 * time.Minute).Milliseconds()) // old is now past Retention, new is not
		testkit.Eventually(t, 5*time.Second, "old pruned", func() bool {
			return slices.Equal(outboxOrder(t, db), []string{"new"})
		})
	})
}
