package outbox_test

import (
	"context"
	"database/sql"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// serverMaxPayload is the max_payload of the server these tests start: lower than
// outbox.MaxPayload, as a server may be configured, so Add accepts a payload NATS refuses.
const serverMaxPayload = 64 << 10

// A row NATS can never accept is set aside, with when and why, and the events after it are
// published; the row stays, counted by the gauge, and publishes once the cause is fixed and
// its mark cleared. Before, every later event of the service waited behind it forever.
func TestRelaySetsAsideRowsNATSNeverAccepts(t *testing.T) {
	tests := []struct {
		name    string
		poison  outbox.Event
		corrupt string // if set, the row's headers are overwritten with it after Add
		failure string // in the recorded failure
		// fix, if set, removes the cause, so the row publishes once replayed.
		fix func(t *testing.T, js jetstream.JetStream, db *sqldb.DB)
	}{
		{
			name:    "payload over the server's max_payload",
			poison:  outbox.Event{ID: "poison", Subject: "boxoffice.test.thing.created", Payload: []byte(strings.Repeat("x", serverMaxPayload+1))},
			failure: nats.ErrMaxPayload.Error(),
		},
		{
			name:    "subject no stream stores",
			poison:  outbox.Event{ID: "poison", Subject: "boxoffice.elsewhere.thing.created", Payload: []byte(`{}`)},
			failure: jetstream.ErrNoStreamResponse.Error(),
			fix: func(t *testing.T, js jetstream.JetStream, _ *sqldb.DB) {
				t.Helper()
				if _, err := natsconn.EnsureStream(t.Context(), js, stream, []string{"boxoffice.test.>", "boxoffice.elsewhere.>"}); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:    "unreadable headers",
			poison:  outbox.Event{ID: "poison", Subject: "boxoffice.test.thing.created", Payload: []byte(`{}`)},
			corrupt: `{"traceparent":`,
			failure: "unreadable headers",
			fix: func(t *testing.T, _ jetstream.JetStream, db *sqldb.DB) {
				t.Helper()
				if _, err := db.ExecContext(t.Context(), db.Rebind(`UPDATE outbox SET headers = ? WHERE id = ?`), `{}`, "poison"); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
				ctx := t.Context()
				js, s := setupOn(t, db, testkit.StartNATSServer(t, func(o *server.Options) { o.MaxPayload = serverMaxPayload }).ClientURL())
				add(t, ctx, db, true, "before")
				if err := db.InTx(ctx, func(tx *sql.Tx) error { return outbox.Add(ctx, tx, db, tt.poison) }); err != nil {
					t.Fatalf("Add(%s): %v", tt.poison.ID, err)
				}
				if tt.corrupt != "" {
					if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE outbox SET headers = ? WHERE id = ?`), tt.corrupt, tt.poison.ID); err != nil {
						t.Fatal(err)
					}
				}
				add(t, ctx, db, true, "after")

				reader := sdkmetric.NewManualReader()
				var logs testkit.Buffer
				var now atomic.Int64
				now.Store(time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
				relay := &outbox.Relay{
					DB: db, JS: js, Interval: 10 * time.Millisecond,
					Clock:         func() time.Time { return time.UnixMilli(now.Load()) },
					Ensure:        ensure(js, "boxoffice.test.>"),
					MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
					Log:           slog.New(slog.NewTextHandler(&logs, nil)),
				}
				run(t, relay)
				testkit.Eventually(t, 10*time.Second, "the event after the poison row in the stream", func() bool { return msgCount(t, s) >= 2 })
				if got, want := streamIDs(t, s), []string{"before", "after"}; !slices.Equal(got, want) {
					t.Errorf("stream ids = %v, want %v", got, want)
				}
				failedAt, failure := setAside(t, db, tt.poison.ID)
				if !failedAt.Valid || !strings.Contains(failure.String, tt.failure) {
					t.Errorf("row %s: failed_at %v, failure %q; want set, with %q", tt.poison.ID, failedAt, failure.String, tt.failure)
				}
				// The stream has the events a moment before the relay marks their rows.
				testkit.Eventually(t, 10*time.Second, "only the row set aside left unpublished", func() bool { return pending(t, db) == 1 })
				if got := gauge(t, reader, "boxoffice.outbox.set_aside"); got != 1 {
					t.Errorf("gauge boxoffice.outbox.set_aside = %d, want 1", got)
				}
				if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "id="+tt.poison.ID) {
					t.Errorf("log = %q, want an ERROR naming %s", l, tt.poison.ID)
				}
				if tt.fix == nil {
					return
				}

				tt.fix(t, js, db)
				if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE outbox SET failed_at = NULL, failure = NULL WHERE id = ?`), tt.poison.ID); err != nil {
					t.Fatal(err)
				}
				relay.Notify()
				testkit.Eventually(t, 10*time.Second, "the replayed row in the stream", func() bool { return msgCount(t, s) >= 3 })
				if got, want := streamIDs(t, s), []string{"before", "after", tt.poison.ID}; !slices.Equal(got, want) {
					t.Errorf("stream ids after the replay = %v, want %v", got, want)
				}
				now.Add(2 * time.Minute.Milliseconds()) // the relay counts the rows set aside every minute
				testkit.Eventually(t, 5*time.Second, "the gauge back to 0", func() bool { return gauge(t, reader, "boxoffice.outbox.set_aside") == 0 })
			})
		})
	}
}

// A publish that finds no stream is not final while the stream may come: without Ensure the
// relay cannot tell and waits; with it, a stream deleted under the relay is created again.
// No row is set aside either way.
func TestRelayWaitsForAMissingStream(t *testing.T) {
	tests := []struct {
		name   string
		ensure bool
	}{
		{"no Ensure: the stream is created later", false},
		{"Ensure: the stream was deleted", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
				ctx := t.Context()
				js, _ := setup(t, db)
				var tries atomic.Int64
				relay := &outbox.Relay{DB: db, JS: countingPublisher{js, &tries}, Interval: 10 * time.Millisecond}
				if tt.ensure {
					relay.Ensure = ensure(js, "boxoffice.test.>")
				}
				add(t, ctx, db, true, "ev-1")
				run(t, relay)
				testkit.Eventually(t, 5*time.Second, "ev-1 published", func() bool { return pending(t, db) == 0 })
				if err := js.DeleteStream(ctx, stream); err != nil {
					t.Fatal(err)
				}
				add(t, ctx, db, true, "ev-2")
				relay.Notify()
				if !tt.ensure {
					start := tries.Load()
					testkit.Eventually(t, 10*time.Second, "three publish attempts without a stream", func() bool { return tries.Load() >= start+3 })
					if failedAt, _ := setAside(t, db, "ev-2"); failedAt.Valid {
						t.Fatalf("ev-2 set aside while its stream is missing, want it pending")
					}
					if _, err := natsconn.EnsureStream(ctx, js, stream, []string{"boxoffice.test.>"}); err != nil {
						t.Fatal(err)
					}
				}
				testkit.Eventually(t, 15*time.Second, "ev-2 published", func() bool { return pending(t, db) == 0 })
				s, err := js.Stream(ctx, stream) // the stream ev-2 went to, created after the wait
				if err != nil {
					t.Fatal(err)
				}
				if got, want := streamIDs(t, s), []string{"ev-2"}; !slices.Equal(got, want) {
					t.Errorf("stream ids = %v, want %v", got, want)
				}
			})
		})
	}
}

// setupOn is setup with the NATS server at url.
func setupOn(t *testing.T, db *sqldb.DB, url string) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	if err := outbox.EnsureTable(t.Context(), db); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	js := testkit.JetStream(t, url)
	s, err := natsconn.EnsureStream(t.Context(), js, stream, []string{"boxoffice.test.>"})
	if err != nil {
		t.Fatal(err)
	}
	return js, s
}

// ensure is a Relay's Ensure for the test stream over subjects.
func ensure(js jetstream.JetStream, subjects ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := natsconn.EnsureStream(ctx, js, stream, subjects)
		return err
	}
}

// setAside reads the mark the relay leaves on a row it set aside.
func setAside(t *testing.T, db *sqldb.DB, id string) (failedAt sql.NullInt64, failure sql.NullString) {
	t.Helper()
	err := db.QueryRowContext(t.Context(), db.Rebind(`SELECT failed_at, failure FROM outbox WHERE id = ?`), id).Scan(&failedAt, &failure)
	if err != nil {
		t.Fatalf("read row %s: %v", id, err)
	}
	return failedAt, failure
}

// gauge collects reader and returns the value of the int64 gauge name; it fails the test
// if there is none.
func gauge(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == name && len(g.DataPoints) > 0 {
				return g.DataPoints[0].Value
			}
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
