package lab

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

func TestParseTrace(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  []Request
		error string
	}{
		{"seconds only", "0\n1.5\n", []Request{{At: 0, Cost: 1}, {At: 1500 * time.Millisecond, Cost: 1}}, ""},
		{"key and cost", "0.25, alice ,3\n0.25,bob", []Request{{At: 250 * time.Millisecond, Key: "alice", Cost: 3}, {At: 250 * time.Millisecond, Key: "bob", Cost: 1}}, ""},
		{"comments and blank lines", "# header\n\n2,alice # note\n", []Request{{At: 2 * time.Second, Key: "alice", Cost: 1}}, ""},
		{"microsecond fractions stay exact", "0.000001\n", []Request{{At: time.Microsecond, Cost: 1}}, ""},
		{"time goes back", "1\n0.5\n", nil, "line 2"},
		{"negative time", "-1\n", nil, "line 1: time"},
		{"zero cost", "1,a,0\n", nil, "cost"},
		{"too many fields", "1,a,1,x\n", nil, "4 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTrace(strings.NewReader(tt.in))
			if tt.error != "" {
				if err == nil || !strings.Contains(err.Error(), tt.error) {
					t.Fatalf("ParseTrace(%q) error = %v, want one containing %q", tt.in, err, tt.error)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseTrace(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestReplay(t *testing.T) {
	// Five requests in 100ms then one a second later, limit 3 per second.
	var trace []Request
	for i := range 5 {
		trace = append(trace, Request{At: time.Duration(i) * 20 * time.Millisecond, Key: "a", Cost: 1})
	}
	trace = append(trace, Request{At: 1100 * time.Millisecond, Key: "a", Cost: 1})
	got, err := Replay(trace, Config{Limit: 3, Window: time.Second, Algorithms: []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.GCRA}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Algorithm: ratelimit.FixedWindow, Allowed: 4, Denied: 2, Decisions: []bool{true, true, true, false, false, true}, Remaining: []int{2, 1, 0, 0, 0, 2}},
		{Algorithm: ratelimit.GCRA, Allowed: 4, Denied: 2, Decisions: []bool{true, true, true, false, false, true}, Remaining: []int{2, 1, 0, 0, 0, 2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Replay = %+v, want %+v", got, want)
	}
	if all, _ := Replay(trace, Config{Limit: 3, Window: time.Second}); len(all) != len(ratelimit.Algorithms) {
		t.Errorf("Replay with no algorithms named ran %d, want all %d", len(all), len(ratelimit.Algorithms))
	}
	if _, err := Replay(trace, Config{Limit: 0, Window: time.Second}); err == nil {
		t.Errorf("Replay with limit 0 = nil error, want one")
	}
}

func TestReplayConcurrencyIgnoresCost(t *testing.T) {
	// Two requests of cost 3 under a limit of 3: the buckets spend 3 units each, the
	// concurrency limit one slot each.
	trace := []Request{{At: 0, Key: "a", Cost: 3}, {At: time.Millisecond, Key: "a", Cost: 3}}
	got, err := Replay(trace, Config{Limit: 3, Window: time.Second, Algorithms: []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.Concurrency}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Algorithm: ratelimit.TokenBucket, Allowed: 1, Denied: 1, Decisions: []bool{true, false}, Remaining: []int{0, 0}},
		{Algorithm: ratelimit.Concurrency, Allowed: 2, Denied: 0, Decisions: []bool{true, true}, Remaining: []int{2, 1}, Note: NoteConcurrencyCost},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Replay = %+v, want %+v", got, want)
	}
	ones := []Request{{At: 0, Key: "a", Cost: 1}}
	if got, _ := Replay(ones, Config{Limit: 3, Window: time.Second, Algorithms: []ratelimit.Algorithm{ratelimit.Concurrency}}); got[0].Note != "" {
		t.Errorf("Replay of cost-1 requests: concurrency note %q, want none", got[0].Note)
	}
}

// TestReplayQueue: with a max delay the lab adds the queue's line, whose every request
// passed at once, waited its turn, or was refused: forty at once into a queue of 20 at 10 a
// second pass one, delay 19 by 0.1 to 1.9 s and refuse 20.
func TestReplayQueue(t *testing.T) {
	trace := make([]Request, 40)
	for i := range trace {
		trace[i] = Request{Key: "fan", Cost: 1}
	}
	results, err := Replay(trace, Config{Limit: 10, Window: time.Second, Burst: 20, MaxDelay: 2 * time.Second,
		Algorithms: []ratelimit.Algorithm{ratelimit.GCRA}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Name() != "gcra" || results[1].Name() != QueueLabel {
		t.Fatalf("lines = %d, want gcra then %s", len(results), QueueLabel)
	}
	meter, queue := results[0], results[1]
	if meter.Allowed != 20 || meter.Delays != nil {
		t.Errorf("gcra allowed %d with delays %v, want 20 and none: a meter does not delay", meter.Allowed, meter.Delays)
	}
	for i, d := range queue.Delays {
		want := 0.0
		if i < 20 {
			want = float64(i) / 10
		}
		if queue.Decisions[i] != (i < 20) || math.Abs(d-want) > 1e-9 {
			t.Errorf("request %d: allowed %v after %vs, want %v after %vs", i+1, queue.Decisions[i], d, i < 20, want)
		}
	}
}
