package upstream

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An answer of unknown length that keeps moving outlasts the server's write timeout, which
// bounds a whole response: server-sent events through the gateway are not cut after it.
func TestStreamOutlastsTheWriteTimeout(t *testing.T) {
	const events, gap, writeTimeout = 8, 60 * time.Millisecond, 200 * time.Millisecond
	be := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range events {
			fmt.Fprintf(w, "data: %d\n\n", i)
			_ = rc.Flush()
			time.Sleep(gap) // the stream's own pace: 8 × 60ms, past the write timeout
		}
	})
	p, err := New([]ServiceConfig{{Name: "svc", Instances: []string{be.url}, Probe: ProbeConfig{Disabled: true}}}, Options{StreamIdle: writeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Forward(w, r, "svc", RouteOptions{})
	}))
	srv.Config.WriteTimeout = writeTimeout // as the platform's server has one (60s)
	srv.Start()
	t.Cleanup(srv.Close)

	res, err := http.Get(srv.URL + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if got := strings.Count(string(b), "data: "); err != nil || got != events {
		t.Errorf("stream through the gateway: %d of %d events, error %v; want all, none", got, events, err)
	}
}
