package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler) (int, Report) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var rep Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
	return rec.Code, rep
}

func TestReadinessFlipsWithCheck(t *testing.T) {
	c := New(time.Second)
	var failing atomic.Bool
	c.Add("db", func(context.Context) error {
		if failing.Load() {
			return errors.New("connection refused")
		}
		return nil
	})

	if code, rep := get(t, c.ReadyHandler()); code != http.StatusOK || !rep.Ready || rep.Checks["db"] != "ok" {
		t.Fatalf("readyz = %d %+v, want 200 ready", code, rep)
	}
	failing.Store(true)
	if code, rep := get(t, c.ReadyHandler()); code != http.StatusServiceUnavailable || rep.Ready || rep.Checks["db"] != "connection refused" {
		t.Fatalf("readyz with failing check = %d %+v, want 503 naming the error", code, rep)
	}
	failing.Store(false)
	if code, _ := get(t, c.ReadyHandler()); code != http.StatusOK {
		t.Fatalf("readyz after recovery = %d, want 200", code)
	}
}

func TestDrainingIsNotReadyButAlive(t *testing.T) {
	c := New(time.Second)
	c.SetDraining()
	if code, rep := get(t, c.ReadyHandler()); code != http.StatusServiceUnavailable || !rep.Draining {
		t.Fatalf("readyz while draining = %d %+v, want 503 draining", code, rep)
	}
	rec := httptest.NewRecorder()
	c.LiveHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("healthz while draining = %d, want 200", rec.Code)
	}
}

func TestSlowCheckTimesOut(t *testing.T) {
	c := New(20 * time.Millisecond)
	c.Add("slow", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	start := time.Now()
	rep := c.Ready(context.Background())
	if rep.Ready || rep.Checks["slow"] != context.DeadlineExceeded.Error() {
		t.Fatalf("Ready = %+v, want the slow check to fail with a deadline", rep)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("Ready took %v, want it bounded by the check timeout", elapsed)
	}
}
