package waitroom

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/waitroom/pass"
)

var testKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// newQueue is one waitroom replica over rdb on clk (nil = Redis TIME).
func newQueue(rdb redis.UniversalClient, clk *testkit.Clock) *Queue {
	q := &Queue{Redis: rdb, Key: testKey}
	if clk != nil {
		q.Now = clk.Now
	}
	return q
}

// openSales opens the sales of events to joins, for the queue TTL.
func openSales(t *testing.T, q *Queue, events ...string) {
	t.Helper()
	for _, event := range events {
		if open, err := q.Open(context.Background(), event, time.Time{}); !open || err != nil {
			t.Fatalf("Open(%s) = %v, %v, want open", event, open, err)
		}
	}
}

func join(t *testing.T, q *Queue, event, user string) Status {
	t.Helper()
	st, err := q.Join(context.Background(), event, user)
	if err != nil {
		t.Fatalf("Join(%s, %s): %v", event, user, err)
	}
	return st
}

func TestJoinIsIdempotent(t *testing.T) {
	q := newQueue(testkit.StartRedis(t).Client(), testkit.NewClock(time.Unix(1_800_000_000, 0), 0))
	openSales(t, q, "evt-flash", "evt-other")
	for i, user := range []string{"acc-a", "acc-b", "acc-c"} {
		if st := join(t, q, "evt-flash", user); st.State != Waiting || st.Position != int64(i+1) {
			t.Fatalf("Join(%s) = %+v, want waiting at %d", user, st, i+1)
		}
	}
	for range 3 {
		if st := join(t, q, "evt-flash", "acc-a"); st.Position != 1 {
			t.Errorf("Join(acc-a) again = position %d, want 1", st.Position)
		}
	}
	if st := join(t, q, "evt-flash", "acc-d"); st.Position != 4 {
		t.Errorf("Join(acc-d) = position %d, want 4: repeated joins take no place", st.Position)
	}
	if st := join(t, q, "evt-other", "acc-a"); st.Position != 1 {
		t.Errorf("Join(evt-other, acc-a) = position %d, want 1: queues are per event", st.Position)
	}
	st, err := q.Status(context.Background(), "evt-flash", "acc-c")
	if err != nil || st.Position != 3 || st.EstimatedWait == nil || *st.EstimatedWait != 0 {
		t.Errorf("Status(acc-c) = %+v, %v, want position 3, wait 0s at 50/s", st, err)
	}
}

func TestQueueRefusals(t *testing.T) {
	q := newQueue(testkit.StartRedis(t).Client(), nil)
	openSales(t, q, "evt-flash")
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
		want problem.Code
	}{
		{"join anonymous", func() error { _, err := q.Join(ctx, "evt-flash", ""); return err }, problem.Unauthorized},
		{"join bad event", func() error { _, err := q.Join(ctx, "evt}{", "acc-a"); return err }, problem.Invalid},
		{"status not joined", func() error { _, err := q.Status(ctx, "evt-flash", "acc-z"); return err }, problem.NotFound},
		{"negative rate", func() error { return q.SetRate(ctx, "evt-flash", -1) }, problem.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); problem.CodeOf(err) != tt.want || err == nil {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
}

// TestAdmissionRate steps an injected clock through seconds: two replicas admitting as
// often as they like admit exactly the rate per second between them.
func TestAdmissionRate(t *testing.T) {
	ctx := context.Background()
	rdb := testkit.StartRedis(t).Client()
	clk := testkit.NewClock(time.Unix(1_800_000_000, 200_000_000), 0) // 0.2s into a second
	replicas := []*Queue{newQueue(rdb, clk), newQueue(rdb, clk)}
	const rate, fans = 5, 23
	if err := replicas[0].SetRate(ctx, "evt-flash", rate); err != nil {
		t.Fatal(err)
	}
	for i := range fans {
		join(t, replicas[i%2], "evt-flash", fmt.Sprintf("acc-%02d", i))
	}

	admitted := 0
	admitAll := func() {
		for range 10 {
			for _, q := range replicas {
				n, err := q.Admit(ctx, "evt-flash")
				if err != nil {
					t.Fatal(err)
				}
				admitted += max(n, 0) // -1 once nobody waits
			}
		}
	}
	for second, want := range []int{5, 10, 15, 20, 23, 23} {
		admitAll()
		clk.Advance(700 * time.Millisecond) // still the same second: nothing more
		admitAll()
		if admitted != want {
			t.Fatalf("after second %d: %d admitted, want %d", second, admitted, want)
		}
		clk.Advance(300 * time.Millisecond)
	}

	// The first five in are the first five who joined; the sixth is next in line.
	for i, want := range map[int]State{0: Admitted, 4: Admitted, 22: Admitted} {
		st, err := replicas[1].Status(ctx, "evt-flash", fmt.Sprintf("acc-%02d", i))
		if err != nil || st.State != want {
			t.Errorf("Status(acc-%02d) = %+v, %v, want %s", i, st, err, want)
		}
	}
	s, err := replicas[0].Settings(ctx, "evt-flash")
	if err != nil || s != (Settings{EventID: "evt-flash", AdmitPerSecond: rate, Waiting: 0, Admitted: fans}) {
		t.Errorf("Settings = %+v, %v, want rate %d, 0 waiting, %d admitted", s, err, rate, fans)
	}
}

func TestAdmissionOrderAndPositions(t *testing.T) {
	ctx := context.Background()
	clk := testkit.NewClock(time.Unix(1_800_000_000, 0), 0)
	q := newQueue(testkit.StartRedis(t).Client(), clk)
	if err := q.SetRate(ctx, "evt-flash", 2); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b", "c", "d", "e"} {
		join(t, q, "evt-flash", u)
	}
	if n, err := q.Admit(ctx, "evt-flash"); n != 2 || err != nil {
		t.Fatalf("Admit = %d, %v, want 2", n, err)
	}
	tests := []struct {
		user     string
		state    State
		position int64
		wait     int64
	}{
		{"a", Admitted, 0, 0}, {"b", Admitted, 0, 0},
		{"c", Waiting, 1, 0}, {"d", Waiting, 2, 0}, {"e", Waiting, 3, 1},
	}
	for _, tt := range tests {
		st, err := q.Status(ctx, "evt-flash", tt.user)
		if err != nil {
			t.Fatal(err)
		}
		gotWait := int64(-1)
		if st.EstimatedWait != nil {
			gotWait = *st.EstimatedWait
		}
		if st.State != tt.state || st.Position != tt.position || (tt.state == Waiting && gotWait != tt.wait) {
			t.Errorf("Status(%s) = %s at %d (wait %d), want %s at %d (wait %d)", tt.user, st.State, st.Position, gotWait, tt.state, tt.position, tt.wait)
		}
	}
	// Paused: no admissions, no estimate.
	if err := q.SetRate(ctx, "evt-flash", 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if n, _ := q.Admit(ctx, "evt-flash"); n != 0 {
		t.Errorf("Admit while paused = %d, want 0", n)
	}
	if st, _ := q.Status(ctx, "evt-flash", "c"); st.EstimatedWait != nil {
		t.Errorf("estimate while paused = %d, want none", *st.EstimatedWait)
	}
}

func TestPassOfAnAdmittedFan(t *testing.T) {
	ctx := context.Background()
	clk := testkit.NewClock(time.Unix(1_800_000_000, 0), 0)
	q := newQueue(testkit.StartRedis(t).Client(), clk)
	q.PassTTL = 2 * time.Minute
	openSales(t, q, "evt-flash")
	join(t, q, "evt-flash", "acc-a")
	join(t, q, "evt-flash", "acc-b")
	admittedAt := clk.Now()
	if n, _ := q.Admit(ctx, "evt-flash"); n != 2 {
		t.Fatalf("Admit = %d, want 2", n)
	}
	clk.Advance(time.Minute)
	st, err := q.Status(ctx, "evt-flash", "acc-a")
	if err != nil || st.State != Admitted {
		t.Fatalf("Status = %+v, %v, want admitted", st, err)
	}
	wantExpiry := admittedAt.Add(q.PassTTL)
	if !st.PassExpiresAt.Equal(wantExpiry) {
		t.Errorf("PassExpiresAt = %v, want admission + TTL = %v: polling does not extend a pass", st.PassExpiresAt, wantExpiry)
	}
	p, err := pass.Check(testKey.Public().(ed25519.PublicKey), st.Pass, clk.Now(), "evt-flash", "acc-a")
	if err != nil || !p.ExpiresAt.Equal(wantExpiry) {
		t.Errorf("pass.Check = %+v, %v, want a pass for evt-flash/acc-a until %v", p, err, wantExpiry)
	}
	if st := join(t, q, "evt-flash", "acc-a"); st.State != Admitted {
		t.Errorf("Join while admitted = %s, want admitted (no new place)", st.State)
	}

	clk.Advance(time.Minute) // the pass lapses
	if st, _ := q.Status(ctx, "evt-flash", "acc-a"); st.State != Expired || st.Pass != "" {
		t.Errorf("Status after the pass lapsed = %+v, want expired without a pass", st)
	}
	join(t, q, "evt-flash", "acc-late")
	if st := join(t, q, "evt-flash", "acc-a"); st.State != Waiting || st.Position != 2 {
		t.Errorf("Join after the pass lapsed = %+v, want waiting at 2, behind acc-late", st)
	}
}

func TestQueueUsesRedisTimeWithoutAClock(t *testing.T) {
	ctx := context.Background()
	q := newQueue(testkit.StartRedis(t).Client(), nil)
	openSales(t, q, "evt-flash")
	before := time.Now()
	join(t, q, "evt-flash", "acc-a")
	if n, err := q.Admit(ctx, "evt-flash"); n != 1 || err != nil {
		t.Fatalf("Admit = %d, %v, want 1", n, err)
	}
	st, err := q.Status(ctx, "evt-flash", "acc-a")
	if err != nil || st.State != Admitted {
		t.Fatalf("Status = %+v, %v, want admitted", st, err)
	}
	// The loopback server's clock is this machine's: the expiry is about now + TTL.
	lo, hi := before.Add(DefaultPassTTL-time.Second), time.Now().Add(DefaultPassTTL+time.Second)
	if st.PassExpiresAt.Before(lo) || st.PassExpiresAt.After(hi) {
		t.Errorf("PassExpiresAt = %v, want within [%v, %v]", st.PassExpiresAt, lo, hi)
	}
}

// TestSkewedReplicasStayNearTheRate: a replica whose clock lags 700ms cannot reopen a second
// the other has closed, so over ten seconds the two admit at most one extra second's worth.
func TestSkewedReplicasStayNearTheRate(t *testing.T) {
	ctx := context.Background()
	rdb := testkit.StartRedis(t).Client()
	ahead := testkit.NewClock(time.Unix(1_800_000_000, 0), 0)
	behind := testkit.NewClock(ahead.Now().Add(-700*time.Millisecond), 0)
	a, b := newQueue(rdb, ahead), newQueue(rdb, behind)
	const rate = 10
	if err := a.SetRate(ctx, "evt-flash", rate); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		join(t, a, "evt-flash", fmt.Sprintf("acc-%03d", i))
	}
	admitted := 0
	for range 100 { // ten seconds in steps of 100ms
		for _, q := range []*Queue{b, a} {
			n, err := q.Admit(ctx, "evt-flash")
			if err != nil {
				t.Fatal(err)
			}
			admitted += n
		}
		ahead.Advance(100 * time.Millisecond)
		behind.Advance(100 * time.Millisecond)
	}
	if admitted < 10*rate || admitted > 11*rate {
		t.Errorf("admitted %d in ten seconds at %d/s, want %d to %d", admitted, rate, 10*rate, 11*rate)
	}
}

func TestKeysExpireAndEventsArePruned(t *testing.T) {
	ctx := context.Background()
	rdb := testkit.StartRedis(t).Client()
	q := newQueue(rdb, testkit.NewClock(time.Unix(1_800_000_000, 0), 0))
	openSales(t, q, "evt-flash")
	join(t, q, "evt-flash", "acc-a")
	k := keysFor("evt-flash")
	for _, key := range []string{k.seq, k.waiting, k.sale, eventsKey} {
		if ttl := rdb.TTL(ctx, key).Val(); ttl <= 0 || ttl > DefaultQueueTTL {
			t.Errorf("TTL(%s) = %v, want within (0, %v]", key, ttl, DefaultQueueTTL)
		}
	}
	if n, err := q.AdmitAll(ctx); n != 1 || err != nil {
		t.Fatalf("AdmitAll = %d, %v, want 1", n, err)
	}
	if ttl := rdb.TTL(ctx, k.admitted).Val(); ttl <= 0 {
		t.Errorf("TTL(%s) = %v, want a TTL", k.admitted, ttl)
	}
	// Nobody waits any more: the next tick drops the event, and its admitted fan keeps the pass.
	if _, err := q.AdmitAll(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.SIsMember(ctx, eventsKey, "evt-flash").Val() {
		t.Errorf("evt-flash still listed after its queue drained")
	}
	if st, err := q.Status(ctx, "evt-flash", "acc-a"); err != nil || st.State != Admitted {
		t.Errorf("Status(acc-a) after the drop = %+v, %v, want admitted", st, err)
	}
	join(t, q, "evt-flash", "acc-b")
	if !rdb.SIsMember(ctx, eventsKey, "evt-flash").Val() {
		t.Errorf("evt-flash not listed again after a join")
	}
}

// TestUnlistKeepsAQueueWithFans: the admitter found the queue empty, and a join landed
// before its SREM; the event must stay listed, or that fan would wait for a tick that never
// visits them.
func TestUnlistKeepsAQueueWithFans(t *testing.T) {
	ctx := context.Background()
	rdb := testkit.StartRedis(t).Client()
	q := newQueue(rdb, nil)
	q.DefaultRate = 1
	openSales(t, q, "evt-flash")
	join(t, q, "evt-flash", "acc-a")
	if err := q.unlist(ctx, "evt-flash"); err != nil {
		t.Fatal(err)
	}
	if !rdb.SIsMember(ctx, eventsKey, "evt-flash").Val() {
		t.Errorf("unlist(evt-flash) with acc-a waiting dropped the event, want it listed")
	}
	if n, err := q.AdmitAll(ctx); n != 1 || err != nil {
		t.Errorf("AdmitAll = %d, %v, want acc-a admitted", n, err)
	}
}

func TestQueueOnRedisCluster(t *testing.T) {
	ctx := context.Background()
	clk := testkit.NewClock(time.Unix(1_800_000_000, 0), 0)
	q := newQueue(testkit.StartRedisCluster(t).Client(), clk)
	openSales(t, q, "evt-001", "evt-002", "evt-flash")
	for i := range 3 {
		for _, ev := range []string{"evt-001", "evt-002", "evt-flash"} {
			join(t, q, ev, fmt.Sprintf("acc-%d", i))
		}
	}
	if n, err := q.AdmitAll(ctx); n != 9 || err != nil {
		t.Fatalf("AdmitAll on a cluster = %d, %v, want 9", n, err)
	}
	if st, err := q.Status(ctx, "evt-002", "acc-2"); err != nil || st.State != Admitted {
		t.Errorf("Status = %+v, %v, want admitted", st, err)
	}
}
