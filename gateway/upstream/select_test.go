package upstream

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPick(t *testing.T) {
	now := time.Now().UnixNano()
	// What the probes and ejections say of an instance.
	states := map[string]routing{"ready": routingReady, "not_ready": routingOut, "slow": routingSlow, "pending": routingPending, "ejected slow": routingSlow}
	for _, c := range []struct {
		name      string
		inFlight  []int64
		state     []string
		threshold float64 // ServiceConfig.PanicThreshold
		skip      int     // index of the instance to skip, -1 for none
		want      []int
		wantPanic bool
	}{
		{"the less busy of two", []int64{4, 1}, []string{"ready", "ready"}, 0, -1, []int{1}, false},
		{"never the busy one of three", []int64{5, 0, 0}, []string{"ready", "ready", "ready"}, 0, -1, []int{1, 2}, false},
		{"never a not-ready one", []int64{0, 9}, []string{"not_ready", "ready"}, 0, -1, []int{1}, false},
		{"never the skipped one", []int64{0, 9, 9}, []string{"ready", "ready", "ready"}, 0, 0, []int{1, 2}, false},
		{"none routable", []int64{0, 0}, []string{"not_ready", "not_ready"}, 0, -1, nil, false},
		{"only one", []int64{7}, []string{"ready"}, 0, -1, []int{0}, false},
		{"a slow one alone: panic", []int64{0}, []string{"slow"}, 0, -1, []int{0}, true},
		{"in panic, the slow one and never the not-ready one", []int64{0, 0}, []string{"not_ready", "slow"}, 0, -1, []int{1}, true},
		{"half ready is not below the threshold", []int64{0, 0}, []string{"ready", "slow"}, 0, -1, []int{0}, false},
		{"two of three ready: no panic", []int64{0, 0, 0}, []string{"ready", "slow", "ready"}, 0, -1, []int{0, 2}, false},
		{"below a higher threshold: ready and slow ones", []int64{0, 0}, []string{"ready", "slow"}, 0.8, -1, []int{0, 1}, true},
		{"panic off", []int64{0}, []string{"slow"}, -1, -1, nil, false},
		{"in panic, never a pending one", []int64{0, 0}, []string{"pending", "slow"}, 0, -1, []int{1}, true},
		{"pending ones do not count for the share", []int64{0, 0, 0}, []string{"ready", "pending", "pending"}, 0, -1, []int{0}, false},
		{"in panic, never an ejected slow one", []int64{0, 0}, []string{"ejected slow", "slow"}, 0, -1, []int{1}, true},
		{"only ejected slow ones: nothing to add, no panic", []int64{0}, []string{"ejected slow"}, 0, -1, nil, false},
		{"a retry skips the slow one it tried, still in panic", []int64{0, 0, 0}, []string{"not_ready", "slow", "slow"}, 0, 1, []int{2}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := newPool("svc", RetryBudget{})
			cfg := ServiceConfig{Name: "svc", PanicThreshold: c.threshold}.withDefaults()
			pl.cfg.Store(&cfg)
			var ins []*instance
			for i, n := range c.inFlight {
				in := newInstance("svc", mustURL(t, fmt.Sprintf("http://127.0.0.1:%d", 9000+i)), false)
				in.inFlight.Store(n)
				in.routing.Store(states[c.state[i]])
				if c.state[i] == "ejected slow" {
					in.ejectedUntil.Store(now + int64(time.Minute))
				}
				ins = append(ins, in)
			}
			pl.instances.Store(&ins)
			var skip *instance
			if c.skip >= 0 {
				skip = ins[c.skip]
			}
			picked := map[int]bool{}
			for range 200 {
				got, panicking := pl.pick(now, skip, rand.IntN)
				if panicking != c.wantPanic {
					t.Fatalf("pick() in panic = %v, want %v", panicking, c.wantPanic)
				}
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
	cfg := ServiceConfig{Name: "svc"}.withDefaults()
	pl.cfg.Store(&cfg)
	var ins []*instance
	for i := range 3 {
		ins = append(ins, newInstance("svc", mustURL(t, fmt.Sprintf("http://127.0.0.1:%d", 9000+i)), false))
	}
	pl.instances.Store(&ins)
	counts := map[*instance]int{}
	for range 3000 {
		in, _ := pl.pick(time.Now().UnixNano(), nil, rand.IntN)
		counts[in]++
	}
	for i, in := range ins {
		if n := counts[in]; n < 800 || n > 1200 {
			t.Errorf("instance %d picked %d times of 3000, want about 1000", i, n)
		}
	}
}
