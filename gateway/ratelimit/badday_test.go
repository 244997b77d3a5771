package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/testkit"
)

// flakyStore is a store that decides like Redis (a Memory answering on PathStore) until the
// test makes it fail.
type flakyStore struct {
	mem *Memory

	mu    sync.Mutex
	err   error
	times int // how many calls err fails; 0 means every call
	calls int
}

func newFlakyStore(now func() time.Time) *flakyStore {
	return &flakyStore{mem: NewMemory(clock.Func(now))}
}

func (s *flakyStore) Allow(_ context.Context, reqs []Request) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		err := s.err
		if s.times > 0 {
			if s.times--; s.times == 0 {
				s.err = nil
			}
		}
		return Result{}, err
	}
	return s.mem.decide(reqs, true, PathStore), nil
}

func (s *flakyStore) Release(ctx context.Context, leases ...Lease) error {
	return s.mem.Release(ctx, leases...)
}

func (s *flakyStore) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *flakyStore) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// refused is the error of a store that is not listening.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// newTestFailsafe is a Failsafe on clk. Its stores answer at once or fail at once, so the
// round-trip budgets, real time, are set far above any scheduling delay of a loaded machine:
// a store that is slow only because the test process was not scheduled must not count as
// slow.
func newTestFailsafe(t *testing.T, store Limiter, clk *testkit.Clock, opts FailsafeOptions) *Failsafe {
	t.Helper()
	opts.Clock = clk.Clock()
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.ClosedTimeout == 0 {
		opts.ClosedTimeout = 10 * time.Second
	}
	f, err := NewFailsafe(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFailsafeDeniesLocallyUntilTheStoreSaysSo(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{})
	// 10 a second, a burst of 2: the third request waits 100ms for a token.
	q := []Request{{Rule: Rule{ID: "api", Algorithm: TokenBucket, Limit: 10, Window: time.Second, Burst: 2}, Key: "ip:1"}}
	for range 2 {
		if res := mustAllow(t, f, q); !res.Allowed {
			t.Fatal("a request within the burst was denied")
		}
	}
	res := mustAllow(t, f, q)
	if res.Allowed || res.Path != PathStore || res.RetryAfter != 100*time.Millisecond {
		t.Fatalf("third request: allowed %v path %s retry %v, want denied by the store, retry 100ms", res.Allowed, res.Path, res.RetryAfter)
	}
	calls := store.callCount()
	clk.Advance(40 * time.Millisecond)
	for range 1000 { // a flood: none of it reaches the store
		res = mustAllow(t, f, q)
		if res.Allowed || res.Path != PathLocalDeny {
			t.Fatalf("flood before the reset: allowed %v path %s, want denied locally", res.Allowed, res.Path)
		}
	}
	if res.RetryAfter != 60*time.Millisecond {
		t.Errorf("local denial RetryAfter = %v, want the store's 60ms left", res.RetryAfter)
	}
	if got := store.callCount(); got != calls {
		t.Errorf("store calls during the flood = %d, want 0", got-calls)
	}
	clk.Advance(60 * time.Millisecond)
	if res := mustAllow(t, f, q); !res.Allowed || res.Path != PathStore {
		t.Errorf("at the store's reset: allowed %v path %s, want allowed by the store", res.Allowed, res.Path)
	}
}

func TestFailsafeLocalDenialIsCapped(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{DenyFor: time.Second})
	q := []Request{{Rule: Rule{ID: "quota", Algorithm: FixedWindow, Limit: 1, Window: 24 * time.Hour}, Key: "user:1"}}
	mustAllow(t, f, q)
	stored := mustAllow(t, f, q)
	if stored.Allowed || stored.Path != PathStore || stored.RetryAfter <= time.Second {
		t.Fatalf("second request: allowed %v path %s retry %v, want denied by the store until the next day", stored.Allowed, stored.Path, stored.RetryAfter)
	}
	res := mustAllow(t, f, q)
	if res.Path != PathLocalDeny {
		t.Fatalf("third request: path %s, want local_deny", res.Path)
	}
	// The denial is kept for a second, but the client is told the store's own wait.
	if res.RetryAfter != stored.RetryAfter || res.Reset != stored.Reset {
		t.Errorf("local denial RetryAfter %v Reset %v, want the store's %v and %v, not the cache's 1s", res.RetryAfter, res.Reset, stored.RetryAfter, stored.Reset)
	}
	// An operator resets the key in the store: the replica sees it within DenyFor.
	store.mem.restart(q[0], 0)
	clk.Advance(time.Second)
	if res := mustAllow(t, f, q); !res.Allowed || res.Path != PathStore {
		t.Errorf("DenyFor after the reset: allowed %v path %s, want allowed by the store", res.Allowed, res.Path)
	}
}

func TestFailsafeLocalDenialKeepsLargerCostsOnly(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{})
	rule := Rule{ID: "tokens", Algorithm: FixedWindow, Limit: 10, Window: time.Minute}
	mustAllow(t, f, []Request{{Rule: rule, Key: "user:1", Cost: 8}})
	if res := mustAllow(t, f, []Request{{Rule: rule, Key: "user:1", Cost: 5}}); res.Allowed {
		t.Fatal("cost 5 with 2 left: allowed, want denied")
	}
	if res := mustAllow(t, f, []Request{{Rule: rule, Key: "user:1", Cost: 2}}); !res.Allowed || res.Path != PathStore {
		t.Errorf("cost 2 with 2 left after a denial of 5: allowed %v path %s, want allowed by the store", res.Allowed, res.Path)
	}
}

func TestFailsafeFallbackStartsFromTheStoresLastAnswer(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{Breaker: Breaker{Unreachable: 1000}})
	holds := []Request{{Rule: Rule{ID: "holds", Algorithm: TokenBucket, Limit: 5, Window: time.Minute}, Key: "user:1"}}
	for range 3 {
		mustAllow(t, f, holds)
	}
	// The store flaps: down, up, down… The fallback starts each time from what the store
	// last said (2 left), never from a full bucket, and what it spends is charged back.
	allowed := 0
	for i := range 40 {
		if i%4 == 0 {
			store.fail(refused)
		} else if i%4 == 2 {
			store.fail(nil)
		}
		if mustAllow(t, f, holds).Allowed {
			allowed++
		}
		waitChargedBack(t, f)
	}
	if allowed != 2 {
		t.Errorf("allowed %d while the store flapped with 2 left (clock still), want 2", allowed)
	}
}

func TestFailsafeChargesBackWhatTheFallbackSpent(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{Breaker: Breaker{Unreachable: 1000}})
	api := []Request{{Rule: Rule{ID: "api", Algorithm: FixedWindow, Limit: 10, Window: time.Minute}, Key: "user:1"}}
	mustAllow(t, f, api) // 9 left in the store
	store.fail(refused)
	for range 4 {
		if res := mustAllow(t, f, api); !res.Allowed || res.Path != PathFallback {
			t.Fatalf("fallback: allowed %v path %s, want allowed on the fallback", res.Allowed, res.Path)
		}
	}
	store.fail(nil)
	// The first request after the outage charges the 4 back before it is decided.
	res := mustAllow(t, f, api)
	if res.Path != PathStore || res.Remaining != 4 {
		t.Fatalf("first decision after the outage: path %s remaining %d, want store 4 (10 - 1 - 4 - 1)", res.Path, res.Remaining)
	}
	if got := f.ledger.owed(api[0]); got != 0 {
		t.Errorf("owed after the charge-back = %d, want 0", got)
	}
}

func TestFailsafeChargesBackKeysThatAskNoMore(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{Breaker: Breaker{Unreachable: 1000}})
	rule := Rule{ID: "quota", Algorithm: FixedWindow, Limit: 10, Window: 24 * time.Hour}
	quiet, busy := Request{Rule: rule, Key: "tenant:quiet"}, Request{Rule: rule, Key: "tenant:busy"}
	store.fail(refused)
	for range 3 {
		mustAllow(t, f, []Request{quiet})
	}
	store.fail(nil)
	mustAllow(t, f, []Request{busy}) // any answer from the store starts the charge-back
	waitChargedBack(t, f)
	if got := f.ledger.owed(quiet); got != 0 {
		t.Errorf("quiet key's debt after the charge-back = %d, want 0", got)
	}
	if res := store.mem.decide([]Request{quiet}, false, PathStore); res.Remaining != 7 {
		t.Errorf("quiet key's budget in the store = %d, want 7 (its 3 fallback requests charged)", res.Remaining)
	}
}

func TestFailsafeQuotaNotRegrantedAcrossAnOutage(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{Breaker: Breaker{Unreachable: 2, OpenFor: time.Second}})
	quota := []Request{{Rule: Rule{ID: "quota", Algorithm: FixedWindow, Limit: 5, Window: 30 * 24 * time.Hour}, Key: "tenant:1"}}
	allowed := 0
	for phase, err := range []error{nil, refused, nil, refused, nil} {
		store.fail(err)
		for range 10 {
			if mustAllow(t, f, quota).Allowed {
				allowed++
			}
			clk.Advance(200 * time.Millisecond) // past DenyFor and OpenFor now and then
		}
		waitChargedBack(t, f)
		if allowed > 5 {
			t.Fatalf("after phase %d: %d allowed, want at most the quota of 5", phase, allowed)
		}
	}
	if allowed != 5 {
		t.Errorf("allowed %d, want 5", allowed)
	}
}

func TestFailsafeClosedLaneIsItsOwn(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	open, closed := newFlakyStore(clk.Now), newFlakyStore(clk.Now)
	f := newTestFailsafe(t, open, clk, FailsafeOptions{ClosedStore: closed, Breaker: Breaker{MinCalls: 5}})
	api := []Request{{Rule: Rule{ID: "api", Algorithm: FixedWindow, Limit: 1000, Window: time.Minute}, Key: "ip:1"}}
	login := []Request{{Rule: Rule{ID: "login", Algorithm: FixedWindow, Limit: 1000, Window: time.Minute, OnStoreFailure: FailClosed}, Key: "ip:2"}}
	open.fail(context.DeadlineExceeded) // the open lane's calls time out: its breaker opens
	for range 10 {
		mustAllow(t, f, api)
	}
	if !f.BreakerOpen() {
		t.Fatal("open lane's breaker after 10 timeouts: closed, want open")
	}
	if res := mustAllow(t, f, login); !res.Allowed || res.Path != PathStore {
		t.Errorf("login while the open lane is broken: allowed %v path %s, want allowed by the store", res.Allowed, res.Path)
	}
	if got := closed.callCount(); got != 1 {
		t.Errorf("closed lane store calls = %d, want 1", got)
	}
}

func TestFailsafeClosedLaneTriesALateRoundTripAgain(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	store := newFlakyStore(clk.Now)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{})
	login := []Request{{Rule: Rule{ID: "login", Algorithm: FixedWindow, Limit: 10, Window: time.Minute, OnStoreFailure: FailClosed}, Key: "ip:2"}}
	store.mu.Lock()
	store.err, store.times = context.DeadlineExceeded, 1
	store.mu.Unlock()
	if res := mustAllow(t, f, login); !res.Allowed || res.Path != PathStore {
		t.Errorf("login after one late round trip: allowed %v path %s, want allowed by the store", res.Allowed, res.Path)
	}
	store.fail(refused) // a store that cannot be reached is not tried twice
	calls := store.callCount()
	if res := mustAllow(t, f, login); res.Allowed || res.Path != PathFailClosed {
		t.Errorf("login with the store unreachable: allowed %v path %s, want fail_closed", res.Allowed, res.Path)
	}
	if got := store.callCount() - calls; got != 1 {
		t.Errorf("store calls for a login with the store unreachable = %d, want 1", got)
	}
}

func TestJudge(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want callOutcome
	}{
		{nil, callOK},
		{fmt.Errorf("x: %w", ErrNoSlot), callNotCounted},
		{context.Canceled, callNotCounted},
		{refused, callUnreachable},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), callUnreachable},
		{context.DeadlineExceeded, callSlow},
		{errors.New("ERR something"), callSlow},
	} {
		if got := judge(tt.err); got != tt.want {
			t.Errorf("judge(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// waitChargedBack waits for a charge-back under way to end.
func waitChargedBack(t *testing.T, f *Failsafe) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, "charge-back done", func() bool { return !f.ledger.flushing.Load() })
}
