package waitroom

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"boxoffice.dev/platform/testkit"
)

// TestQueueOnTheEmulator: the all-in-one mode falls back to miniredis when no redis-server is
// installed; the scripts must run there too, on the injected clock and on TIME.
func TestQueueOnTheEmulator(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	for _, clk := range []*testkit.Clock{testkit.NewClock(time.Unix(1_800_000_000, 0), 0), nil} {
		name := "redis TIME"
		if clk != nil {
			name = "injected clock"
		}
		t.Run(name, func(t *testing.T) {
			mr.FlushAll()
			q := newQueue(rdb, clk)
			if err := q.SetRate(ctx, "evt-flash", 2); err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"a", "b", "c"} {
				join(t, q, "evt-flash", u)
			}
			if st := join(t, q, "evt-flash", "a"); st.Position != 1 {
				t.Errorf("Join(a) again = position %d, want 1", st.Position)
			}
			if n, err := q.AdmitAll(ctx); n != 2 || err != nil {
				t.Fatalf("AdmitAll = %d, %v, want 2", n, err)
			}
			if st, err := q.Status(ctx, "evt-flash", "b"); err != nil || st.State != Admitted || st.Pass == "" {
				t.Errorf("Status(b) = %+v, %v, want admitted with a pass", st, err)
			}
			if st, err := q.Status(ctx, "evt-flash", "c"); err != nil || st.State != Waiting || st.Position != 1 {
				t.Errorf("Status(c) = %+v, %v, want waiting at 1", st, err)
			}
		})
	}
}
