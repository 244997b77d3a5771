package upstream

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPick(t *testing.T) {
	now := time.Now().UnixNano()
	for _, c := range []struct {
		name     string
		inFlight []int64
		ready    []bool
		skip     int // index of the instance to skip, -1 for none
		want     []int
	}{
		{"the less busy of two", []int64{4, 1}, []bool{true, true}, -1, []int{1}},
		{"never the busy one of three", []int64{5, 0, 0}, []bool{true, true, true}, -1, []int{1, 2}},
		{"never a not-ready one", []int64{0, 9}, []bool{false, true}, -1, []int{1}},
		{"never the skipped one", []int64{0, 9, 9}, []bool{true, true, true}, 0, []int{1, 2}},
		{"none routable", []int64{0, 0}, []bool{false, false}, -1, nil},
		{"only one", []int64{7}, []bool{true}, -1, []int{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := newPool("svc", RetryBudget{})
			var ins []*instance
			for i, n := range c.inFlight {
				in := newInstance("svc", mustURL(t, fmt.Sprintf("http://127.0.0.1:%d", 9000+i)), false)
				in.inFlight.Store(n)
				in.ready.Store(c.ready[i])
				ins = append(ins, in)
			}
			pl.instances.Store(&ins)
			var skip *instance
			if c.skip >= 0 {
				skip = ins[c.skip]
			}
			picked := map[int]bool{}
			for range 200 {
				got := pl.pick(now, skip, rand.IntN)
				i := -1
				for j, in := range ins {
					if in == got {
						i = j
					}
				}
				picked[i] = true
			}
			if c.want == nil {
				if !picked[-1] || len(picked) != 1 {
					t.Errorf("pick() picked %v, want only nil", picked)
				}
				return
			}
			if len(picked) != len(c.want) {
				t.Errorf("pick() picked %v, want exactly %v", picked, c.want)
			}
			for _, w := range c.want {
				if !picked[w] {
					t.Errorf("pick() picked %v, want %d among them", picked, w)
				}
			}
		})
	}
}

// TestPickSpreadsEvenly checks that equally busy instances share the traffic.
func TestPickSpreadsEvenly(t *testing.T) {
	pl := newPool("svc", RetryBudget{})
	var ins []*instance
	for i := range 3 {
		ins = append(ins, newInstance("svc", mustURL(t, fmt.Sprintf("http://127.0.0.1:%d", 9000+i)), false))
	}
	pl.instances.Store(&ins)
	counts := map[*instance]int{}
	for range 3000 {
		counts[pl.pick(time.Now().UnixNano(), nil, rand.IntN)]++
	}
	for i, in := range ins {
		if n := counts[in]; n < 800 || n > 1200 {
			t.Errorf("instance %d picked %d times of 3000, want about 1000", i, n)
		}
	}
}
