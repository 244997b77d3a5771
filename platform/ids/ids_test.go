package ids

import (
	"regexp"
	"sync"
	"testing"
)

func TestNew(t *testing.T) {
	shape := regexp.MustCompile(`^ord_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 100 {
		id := New("ord_")
		if !shape.MatchString(id) {
			t.Fatalf("New(%q) = %q, want ord_ and 32 lowercase hex digits", "ord_", id)
		}
		if seen[id] {
			t.Fatalf("New(%q) gave %q twice in 100 calls", "ord_", id)
		}
		seen[id] = true
	}
}

func TestFunc(t *testing.T) {
	var zero Func
	if id := zero.New("hold-"); !regexp.MustCompile(`^hold-[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("Func(nil).New(%q) = %q, want what New makes", "hold-", id)
	}
	seq := Sequence()
	for i, want := range []string{"ord_000001", "ch_000002", "ord_000003"} {
		prefix := want[:len(want)-6]
		if got := seq.New(prefix); got != want {
			t.Errorf("call %d: Sequence().New(%q) = %q, want %q", i+1, prefix, got, want)
		}
	}
}

func TestSequenceConcurrent(t *testing.T) {
	seq := Sequence()
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				id := seq.New("m_")
				mu.Lock()
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 400 {
		t.Errorf("8 goroutines × 50 ids from one Sequence gave %d distinct ids, want 400", len(seen))
	}
}
