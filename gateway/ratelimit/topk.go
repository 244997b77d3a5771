package ratelimit

import (
	"cmp"
	"container/heap"
	"slices"
)

// TopK finds the most frequent keys of a stream in the memory of k counters, by the
// Space-Saving algorithm (Metwally, Agrawal and El Abbadi, 2005): a key not counted takes
// the place of the least counted one and inherits its count as a possible overestimate. Any
// key seen more than n/k times of n is in the list, and a count is high by at most its Err.
// The zero value is not usable; call NewTopK. Not safe for concurrent use.
type TopK[K comparable] struct {
	k     int
	n     int64
	index map[K]*counter[K]
	heap  counterHeap[K] // least counted first
}

// KeyCount is a key and how often TopK saw it: Count, of which at most Err may be counts of
// keys it replaced.
type KeyCount[K comparable] struct {
	Key        K
	Count, Err int64
}

type counter[K comparable] struct {
	KeyCount[K]
	at int // place in the heap
}

// NewTopK counts with k counters (at least 1).
func NewTopK[K comparable](k int) *TopK[K] {
	k = max(k, 1)
	return &TopK[K]{k: k, index: make(map[K]*counter[K], k), heap: make(counterHeap[K], 0, k)}
}

// Add counts one occurrence of key.
func (t *TopK[K]) Add(key K) {
	t.n++
	if c, ok := t.index[key]; ok {
		c.Count++
		heap.Fix(&t.heap, c.at)
		return
	}
	if len(t.heap) < t.k {
		c := &counter[K]{KeyCount: KeyCount[K]{Key: key, Count: 1}}
		t.index[key] = c
		heap.Push(&t.heap, c)
		return
	}
	least := t.heap[0]
	delete(t.index, least.Key)
	least.KeyCount = KeyCount[K]{Key: key, Count: least.Count + 1, Err: least.Count}
	t.index[key] = least
	heap.Fix(&t.heap, 0)
}

// Total is the number of occurrences counted, of every key.
func (t *TopK[K]) Total() int64 { return t.n }

// Top returns the counted keys, most counted first (ties in no set order).
func (t *TopK[K]) Top() []KeyCount[K] {
	out := make([]KeyCount[K], len(t.heap))
	for i, c := range t.heap {
		out[i] = c.KeyCount
	}
	slices.SortFunc(out, func(a, b KeyCount[K]) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// counterHeap is a min-heap of counters by count, for container/heap.
type counterHeap[K comparable] []*counter[K]

func (h counterHeap[K]) Len() int           { return len(h) }
func (h counterHeap[K]) Less(i, j int) bool { return h[i].Count < h[j].Count }
func (h counterHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = i, j
}
func (h *counterHeap[K]) Push(x any) {
	c := x.(*counter[K])
	c.at = len(*h)
	*h = append(*h, c)
}
func (h *counterHeap[K]) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
