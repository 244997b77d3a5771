package lab

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

// flood is n requests from one key spread evenly over one second.
func flood(n int) []Request {
	trace := make([]Request, n)
	for i := range trace {
		trace[i] = Request{At: (time.Duration(i) * time.Second / time.Duration(n)).Truncate(time.Microsecond), Key: "fan", Cost: 1}
	}
	return trace
}

// TestReplayApproxFlood: 300 requests in one second under 100 a second. Exact, the
// fixed_window admits 100. Approximate on 3 replicas synced every 100ms, each replica is
// sent 10 requests between two syncs and cannot see the others' since, so the window admits
// more than 100 but at most 100 + 2 × 10 = 120, the bound the note states.
func TestReplayApproxFlood(t *testing.T) {
	results, err := Replay(flood(300), Config{Limit: 100, Window: time.Second, Sync: 100 * time.Millisecond,
		Algorithms: []ratelimit.Algorithm{ratelimit.FixedWindow}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[1].Name() != "fixed_window ~100ms×3" {
		t.Fatalf("lines %v, want fixed_window then fixed_window ~100ms×3", names(results))
	}
	exact, approx := results[0], results[1]
	if exact.Allowed != 100 || exact.Over != 0 {
		t.Errorf("exact fixed_window allowed %d (over %d), want 100 (over 0)", exact.Allowed, exact.Over)
	}
	if approx.Allowed <= 100 || approx.Allowed > 120 {
		t.Errorf("approximate allowed %d, want more than 100 and at most 120", approx.Allowed)
	}
	if approx.Over != approx.Allowed-100 {
		t.Errorf("approximate over = %d, want %d: one window, one key", approx.Over, approx.Allowed-100)
	}
	if !strings.HasSuffix(approx.Note, "at most 100 + 2 × 10 = 120") {
		t.Errorf("note %q, want it to end with the bound 100 + 2 × 10 = 120", approx.Note)
	}
	t.Logf("approximate: allowed %d, over %d; %s", approx.Allowed, approx.Over, approx.Note)
}

// TestReplayApproxOneReplicaIsExact: one replica reads back only its own counts, so its
// decisions and remaining budgets are the exact algorithm's, on a trace over three windows.
func TestReplayApproxOneReplicaIsExact(t *testing.T) {
	trace := append(flood(300), Request{At: 1500 * time.Millisecond, Key: "fan", Cost: 40}, Request{At: 2200 * time.Millisecond, Key: "other", Cost: 1})
	trace = append(trace, flood(50)...)
	for i := len(trace) - 50; i < len(trace); i++ {
		trace[i].At += 2300 * time.Millisecond
	}
	algs := []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingCounter}
	results, err := Replay(trace, Config{Limit: 100, Window: time.Second, Sync: 100 * time.Millisecond, Replicas: 1, Algorithms: algs})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("lines %v, want two exact and two approximate", names(results))
	}
	for i, alg := range algs {
		exact, approx := results[i], results[i+2]
		if approx.Name() != ApproxLabel(alg, 100*time.Millisecond, 1) {
			t.Errorf("line %d is %q, want %q", i+2, approx.Name(), ApproxLabel(alg, 100*time.Millisecond, 1))
		}
		if !strings.HasPrefix(approx.Note, "one replica") {
			t.Errorf("%s on one replica: note %q, want one saying it decides as the exact algorithm", alg, approx.Note)
		}
		if !reflect.DeepEqual(approx.Decisions, exact.Decisions) || !reflect.DeepEqual(approx.Remaining, exact.Remaining) || approx.Over != 0 {
			t.Errorf("%s on one replica: allowed %d, over %d; want the exact line's decisions and budgets (allowed %d)",
				alg, approx.Allowed, approx.Over, exact.Allowed)
		}
	}
}

// TestReplayApproxSkipsOnlyQuietSyncs: skipping the sync rounds after two with no request
// between changes no decision, on traces with gaps of many windows and of less than one.
func TestReplayApproxSkipsOnlyQuietSyncs(t *testing.T) {
	var trace []Request
	for burst, at := range []time.Duration{0, 450 * time.Millisecond, 2 * time.Second, 2600 * time.Millisecond, 9 * time.Second, 9990 * time.Millisecond} {
		for i := range 60 {
			key := []string{"a", "b"}[i%2]
			trace = append(trace, Request{At: at + time.Duration(i+burst)*time.Millisecond, Key: key, Cost: 1 + i%3})
		}
	}
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingCounter} {
		cfg := Config{Limit: 50, Window: time.Second, Sync: 30 * time.Millisecond, Replicas: 3}
		skipped, err := replayApprox(trace, cfg, alg, true)
		if err != nil {
			t.Fatal(err)
		}
		every, err := replayApprox(trace, cfg, alg, false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(skipped, every) {
			t.Errorf("%s: skipping quiet syncs allowed %d, over %d; every sync allowed %d, over %d; want the same results",
				alg, skipped.Allowed, skipped.Over, every.Allowed, every.Over)
		}
		if every.Over == 0 {
			t.Errorf("%s: over 0; want a trace that overshoots, so that the syncs matter", alg)
		}
	}
}

func TestReplayApproxRefuses(t *testing.T) {
	trace := flood(3)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"sync under 10ms", Config{Sync: 5 * time.Millisecond}, "sync 5ms: want from 10ms to less than the window (1s)"},
		{"sync of a window", Config{Sync: time.Second}, "sync 1s: want from 10ms"},
		{"negative sync", Config{Sync: -time.Second}, "sync -1s"},
		{"negative replicas", Config{Sync: 100 * time.Millisecond, Replicas: -1}, "replicas -1: want 1 to 100"},
		{"replicas without sync", Config{Replicas: 2}, "replicas 2: the approximate lines need a sync"},
		{"under a parent", Config{Sync: 100 * time.Millisecond, Parent: 10}, "a parent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Limit, tt.cfg.Window = 10, time.Second
			_, err := Replay(trace, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Replay(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

func names(results []Result) []string {
	out := make([]string, len(results))
	for i, r := range results {
		out[i] = r.Name()
	}
	return out
}
