package scenario

import (
	"testing"
	"time"
)

// A run planned to last for days and stopped after a second ends at once, and its result
// covers the seconds that ran, not the ones planned.
func TestStopOfALongRunReturnsQuickly(t *testing.T) {
	run := startOnFake(t, fakeScenario, newFakeSystem(), Options{Duration: 10000 * time.Hour})
	samples, cancel := run.Subscribe()
	defer cancel()
	<-samples // a second has run

	stopped := time.Now()
	run.Stop()
	select {
	case <-run.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("a run of %v: not done 5s after Stop", run.Profile().Duration())
	}
	if took := time.Since(stopped); took > 3*time.Second {
		t.Errorf("a run of %v took %v to end after Stop, want under 3s", run.Profile().Duration(), took)
	}
	res := run.Result()
	if res.Totals.Seconds < 1 || res.Totals.Seconds > 10 {
		t.Errorf("Totals.Seconds of a run stopped after about a second = %v, want the seconds that ran (1 to 10)", res.Totals.Seconds)
	}
	for _, ph := range res.Phases {
		if ph.Seconds > 10 {
			t.Errorf("phase %s: Seconds = %v, want at most the seconds that ran", ph.Phase, ph.Seconds)
		}
	}
}
