package ratelimit

import (
	"context"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestNearLimitMetrics drives one key of a rule through its whole budget and past it, and a
// key of another rule to a tenth of its own, then reads the near-limit counter and the
// utilization histogram: of ten allowed decisions on a limit of 10, the 9th and 10th leave
// the budget more than 80 % spent; the denial after them is counted as full, not as near.
func TestNearLimitMetrics(t *testing.T) {
	ctx := context.Background()
	clk := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0) // the window never ends
	reader := sdkmetric.NewManualReader()
	f, err := NewFailsafe(NewMemory(clk.Clock()), FailsafeOptions{Clock: clk.Clock(), Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	hot := []Request{{Rule: Rule{ID: "hot", Algorithm: FixedWindow, Limit: 10, Window: time.Hour}, Key: "user:1"}}
	calm := []Request{{Rule: Rule{ID: "calm", Algorithm: FixedWindow, Limit: 10, Window: time.Hour}, Key: "user:1"}}
	for i := range 11 {
		if res := mustAllow(t, f, hot); res.Allowed != (i < 10) {
			t.Fatalf("decision %d: allowed %v, want %v", i+1, res.Allowed, i < 10)
		}
	}
	mustAllow(t, f, calm)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule string
		want int64
	}{{"hot", 2}, {"calm", 0}} {
		if got := sum(rm, "ratelimit.near_limit.decisions", attribute.String("rule", c.rule)); got != c.want {
			t.Errorf("near-limit decisions of rule %s = %d, want %d", c.rule, got, c.want)
		}
	}
	hist := utilizationPoints(t, rm)
	for _, c := range []struct {
		rule        string
		count       uint64
		above80, at uint64 // decisions above 0.8, and in the last bucket (above 0.99)
	}{{"hot", 11, 3, 2}, {"calm", 1, 0, 0}} {
		dp, ok := hist[c.rule]
		if !ok {
			t.Errorf("no utilization series for rule %s", c.rule)
			continue
		}
		if dp.Attributes.Len() != 1 {
			t.Errorf("utilization of rule %s has attributes %v, want only rule", c.rule, dp.Attributes.ToSlice())
		}
		above := uint64(0)
		for i, b := range dp.Bounds {
			if b >= NearLimitRatio {
				above += dp.BucketCounts[i+1]
			}
		}
		if dp.Count != c.count || above != c.above80 || dp.BucketCounts[len(dp.Bounds)] != c.at {
			t.Errorf("utilization of rule %s: %d decisions, %d above 0.8, %d above 0.99; want %d, %d, %d",
				c.rule, dp.Count, above, dp.BucketCounts[len(dp.Bounds)], c.count, c.above80, c.at)
		}
	}
}

// TestApproximateDecisionsNearTheLimit: decisions made in memory by Approximate count in the
// near-limit and utilization series like the store's.
func TestApproximateDecisionsNearTheLimit(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0)
	reader := sdkmetric.NewManualReader()
	a, err := NewApproximate(NewMemory(clk.Clock()), nil, ApproximateOptions{Counts: &MemoryCounts{}, Clock: clk.Clock(),
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	hot := []Request{{Rule: Rule{ID: "hot", Algorithm: FixedWindow, Limit: 10, Window: time.Hour, Sync: time.Second}, Key: "user:1"}}
	for range 11 {
		mustAllow(t, a, hot)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if got := sum(rm, "ratelimit.near_limit.decisions", attribute.String("rule", "hot")); got != 2 {
		t.Errorf("near-limit decisions = %d, want 2 (the 9th and 10th of 10)", got)
	}
	if dp := utilizationPoints(t, rm)["hot"]; dp.Count != 11 {
		t.Errorf("utilization recorded %d decisions, want 11", dp.Count)
	}
}

func TestUtilization(t *testing.T) {
	tests := []struct {
		name string
		d    Decision
		want float64
	}{
		{"untouched", Decision{Limit: 10, Remaining: 10}, 0},
		{"a fifth spent", Decision{Limit: 10, Remaining: 8}, 0.2},
		{"exhausted", Decision{Limit: 10, Remaining: 0}, 1},
		{"more left than the limit", Decision{Limit: 10, Remaining: 12}, 0},
		{"no limit", Decision{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Utilization(tt.d); got != tt.want {
				t.Errorf("Utilization(%+v) = %v, want %v", tt.d, got, tt.want)
			}
		})
	}
}

// TestUsageRecordAllocatesNothing: the near-limit counter and the utilization histogram are
// on every decision's path; once a rule's attributes exist, recording them costs no allocation.
func TestUsageRecordAllocatesNothing(t *testing.T) {
	u := newTestUsage(t)
	ctx := context.Background()
	d := Decision{Allowed: true, Rule: "hot", Limit: 10, Remaining: 1}
	u.record(ctx, d)
	if allocs := testing.AllocsPerRun(100, func() { u.record(ctx, d) }); allocs != 0 {
		t.Errorf("usage.record allocates %v times a decision, want 0", allocs)
	}
}

// TestDecidedAllocatesNothing: recording a request's decisions (counter, utilization, near
// limit, latency) costs no allocation once each rule's series exist.
func TestDecidedAllocatesNothing(t *testing.T) {
	m, res := benchMetrics(t)
	ctx := context.Background()
	m.decided(ctx, res, time.Millisecond)
	if allocs := testing.AllocsPerRun(100, func() { m.decided(ctx, res, time.Millisecond) }); allocs != 0 {
		t.Errorf("metrics.decided allocates %v times a request, want 0", allocs)
	}
}

// BenchmarkMetricsDecided measures what recording one request's metrics costs, three rules
// decided, on the OpenTelemetry SDK as the gateway runs it: all of it (decided), and apart
// the decision counter and the utilization and near-limit series (usage), whose sum is most
// of it:
//
//	go test -run '^$' -bench MetricsDecided -benchmem ./gateway/ratelimit/
func BenchmarkMetricsDecided(b *testing.B) {
	m, res := benchMetrics(b)
	ctx := context.Background()
	b.Run("decided", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.decided(ctx, res, time.Millisecond)
		}
	})
	b.Run("decisions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range res.Rules {
				m.decisions.add(ctx, outcomeKey{d.Rule, "allowed", d.Path})
			}
		}
	})
	b.Run("usage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range res.Rules {
				m.usage.record(ctx, d)
			}
		}
	})
}

// benchMetrics returns the package's metrics on the OpenTelemetry SDK and a request's result
// of three allowed rules, one of them near its limit.
func benchMetrics(t testing.TB) (*metrics, Result) {
	t.Helper()
	m, err := newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())), func() map[string]BreakerState { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return m, Result{Rules: []Decision{
		{Allowed: true, Rule: "rate", Limit: 100, Remaining: 50, Path: PathStore},
		{Allowed: true, Rule: "minute", Limit: 100, Remaining: 10, Path: PathStore},
		{Allowed: true, Rule: "quota", Limit: 100, Remaining: 99, Path: PathStore},
	}}
}

func newTestUsage(t testing.TB) *usage {
	t.Helper()
	u, err := newUsage(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())).Meter(meterName))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// utilizationPoints returns the data points of ratelimit.utilization by rule.
func utilizationPoints(t *testing.T, rm metricdata.ResourceMetrics) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || m.Name != "ratelimit.utilization" {
				continue
			}
			for _, dp := range h.DataPoints {
				rule, _ := dp.Attributes.Value("rule")
				out[rule.AsString()] = dp
			}
		}
	}
	return out
}
