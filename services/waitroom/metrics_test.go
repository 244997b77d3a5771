package waitroom

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/testkit"
)

// TestQueueMetrics: each AdmitAll leaves boxoffice.waitroom.waiting at the fans still in the
// queue and adds those it let in to boxoffice.waitroom.admissions; once the queue is gone
// the event's waiting series goes too, so a finished sale does not hold a stale length.
func TestQueueMetrics(t *testing.T) {
	ctx := context.Background()
	clk := testkit.NewClock(time.Unix(1_800_000_000, 0), 0)
	reader := sdkmetric.NewManualReader()
	q := newQueue(testkit.StartRedis(t).Client(), clk)
	q.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	openSales(t, q, "evt-flash")
	if err := q.SetRate(ctx, "evt-flash", 2); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		join(t, q, "evt-flash", fmt.Sprintf("acc-%d", i))
	}
	read := func() (waiting int64, seen bool, admitted int64) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		event := attribute.String("event", "evt-flash")
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Gauge[int64]:
					for _, dp := range d.DataPoints {
						if v, _ := dp.Attributes.Value(event.Key); m.Name == "boxoffice.waitroom.waiting" && v == event.Value {
							waiting, seen = dp.Value, true
						}
					}
				case metricdata.Sum[int64]:
					for _, dp := range d.DataPoints {
						if v, _ := dp.Attributes.Value(event.Key); m.Name == "boxoffice.waitroom.admissions" && v == event.Value {
							admitted = dp.Value
						}
					}
				}
			}
		}
		return waiting, seen, admitted
	}

	for _, want := range []struct{ waiting, admitted int64 }{{3, 2}, {1, 4}, {0, 5}} {
		if _, err := q.AdmitAll(ctx); err != nil {
			t.Fatal(err)
		}
		if waiting, seen, admitted := read(); !seen || waiting != want.waiting || admitted != want.admitted {
			t.Errorf("after AdmitAll: waiting %d (series %v), admitted %d; want %d, %d", waiting, seen, admitted, want.waiting, want.admitted)
		}
		clk.Advance(time.Second)
	}
	if _, err := q.AdmitAll(ctx); err != nil { // nobody waits: the event is unlisted
		t.Fatal(err)
	}
	if waiting, seen, _ := read(); seen {
		t.Errorf("after the queue drained: waiting series still %d, want none", waiting)
	}
}
