package ratelimit

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTopKFindsTheHeavyKeysInBoundedMemory streams 100,000 keys drawn from 10,000, one of
// them half the traffic and one a tenth, through 100 counters: both are found, first and
// second, with counts that overestimate by no more than their Err, and every key above
// n/k of the traffic is listed, as Space-Saving guarantees.
func TestTopKFindsTheHeavyKeysInBoundedMemory(t *testing.T) {
	const n, k = 100_000, 100
	rng := rand.New(rand.NewPCG(1, 2))
	top, exact := NewTopK[string](k), map[string]int64{}
	for range n {
		key := fmt.Sprintf("user:%d", rng.IntN(10_000))
		switch r := rng.Float64(); {
		case r < 0.5:
			key = "user:hot"
		case r < 0.6:
			key = "user:warm"
		}
		top.Add(key)
		exact[key]++
	}
	got := top.Top()
	if len(got) != k || top.Total() != n {
		t.Fatalf("Top() has %d keys of %d counted, want %d of %d", len(got), top.Total(), k, n)
	}
	if got[0].Key != "user:hot" || got[1].Key != "user:warm" {
		t.Errorf("Top()[0:2] = %v, %v; want user:hot then user:warm", got[0], got[1])
	}
	listed := map[string]bool{}
	for _, kc := range got {
		listed[kc.Key] = true
		if kc.Count < exact[kc.Key] || kc.Count-kc.Err > exact[kc.Key] {
			t.Errorf("%s counted %d (err %d), seen %d: want count-err <= seen <= count", kc.Key, kc.Count, kc.Err, exact[kc.Key])
		}
	}
	for key, c := range exact {
		if c > n/k && !listed[key] {
			t.Errorf("%s seen %d times (over n/k = %d) is not listed", key, c, n/k)
		}
	}
}

func TestTopKCountsExactlyWhileItHasRoom(t *testing.T) {
	top := NewTopK[string](3)
	for _, key := range []string{"a", "b", "a", "c", "a", "b"} {
		top.Add(key)
	}
	want := []KeyCount[string]{{"a", 3, 0}, {"b", 2, 0}, {"c", 1, 0}}
	if got := top.Top(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Top() = %v, want %v", got, want)
	}
	top.Add("d") // replaces c, the least counted, and inherits its count as error
	got := map[string]KeyCount[string]{}
	for _, kc := range top.Top() {
		got[kc.Key] = kc
	}
	if _, ok := got["c"]; ok || got["d"] != (KeyCount[string]{"d", 2, 1}) {
		t.Errorf("after d, Top() = %v; want c replaced by {d 2 1}", top.Top())
	}
}
