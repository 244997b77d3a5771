package inventory

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// TestRefusedHoldsByReason: a hold before the sale and a hold over the account's cap are
// both Unprocessable to the client, and counted apart by the refused-holds metric, since
// one is fans early and the other one buyer hoarding.
func TestRefusedHoldsByReason(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if err := db.Migrate(ctx, Migrations()); err != nil {
			t.Fatal(err)
		}
		reader := sdkmetric.NewManualReader()
		clk := testkit.NewClock(saleStart, 0)
		s := &Store{DB: db, Clock: clk.Clock(), MaxTicketsPerAccount: 2, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}
		if err := s.Init(ctx); err != nil {
			t.Fatal(err)
		}
		applySale(t, s, "evt-reasons", 1, hallGA, tomorrow)

		early := HoldRequest{EventID: "evt-reasons", Account: "acc-1", Class: "pista", Quantity: 1}
		if _, err := s.PlaceHold(ctx, early); problem.CodeOf(err) != problem.Unprocessable {
			t.Fatalf("PlaceHold before the sale = %v, want unprocessable", err)
		}
		clk.Advance(2 * time.Hour)
		if _, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-reasons", Account: "acc-1", Class: "pista", Quantity: 2}); err != nil {
			t.Fatalf("PlaceHold of the cap: %v", err)
		}
		for range 2 {
			if _, err := s.PlaceHold(ctx, early); problem.CodeOf(err) != problem.Unprocessable {
				t.Fatalf("PlaceHold over the cap = %v, want unprocessable", err)
			}
		}

		got := refusedByReason(t, reader)
		if want := map[string]int64{"not_on_sale": 1, "account_cap": 2}; len(got) != len(want) || got["not_on_sale"] != 1 || got["account_cap"] != 2 {
			t.Errorf("holds_refused by reason = %v, want %v", got, want)
		}
	})
}

// refusedByReason reads boxoffice.inventory.holds_refused from reader, by its reason.
func refusedByReason(t *testing.T, reader sdkmetric.Reader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != "boxoffice.inventory.holds_refused" || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				reason, _ := dp.Attributes.Value("reason")
				out[reason.AsString()] += dp.Value
			}
		}
	}
	return out
}
