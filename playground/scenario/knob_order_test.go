package scenario

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Two people turn the same knob at nearly the same time and the first one's admin call is
// slow: once both calls have returned, the gateway enforces the value the run reports, and
// the timeline lists the changes in the order they took effect.
func TestConcurrentKnobChangesEndAsTheKnobsSay(t *testing.T) {
	sys := newFakeSystem()
	slowPut := make(chan struct{})
	var once sync.Once
	run := startOnFake(t, fakeScenario, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/admin/limits/lim" {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"rate":"10/s"`) {
				once.Do(func() { close(slowPut) })
				time.Sleep(300 * time.Millisecond) // a busy gateway: this call lands late
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		sys.ServeHTTP(w, r)
	}), Options{})

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := run.SetKnob(context.Background(), "rate", "10"); err != nil {
			t.Errorf("SetKnob(rate, 10) = %v", err)
		}
	})
	<-slowPut // the first change is on its way to the gateway
	if err := run.SetKnob(context.Background(), "rate", "20"); err != nil {
		t.Errorf("SetKnob(rate, 20) = %v", err)
	}
	wg.Wait()

	sys.mu.Lock()
	enforced := sys.limits["lim"]
	sys.mu.Unlock()
	if want := `"rate":"` + run.Knobs()["rate"] + `/s"`; !strings.Contains(enforced, want) {
		t.Errorf("after SetKnob(rate, 10) and SetKnob(rate, 20): Knobs()[rate] = %s, gateway's limit = %s; want the same rate", run.Knobs()["rate"], enforced)
	}
	var changes []string
	for _, e := range run.Events() {
		if e.Kind == "knob" && strings.HasPrefix(e.What, "rate = ") {
			changes = append(changes, e.What)
		}
	}
	if len(changes) == 0 || changes[len(changes)-1] != "rate = "+run.Knobs()["rate"]+" (set by hand)" {
		t.Errorf("timeline's rate changes = %q, want the last to be the value in force, %s", changes, run.Knobs()["rate"])
	}
}
