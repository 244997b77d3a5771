package playground

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/playground/scenario"
)

// echoSystem is the smallest system a scenario can drive: one real BoxOffice process
// (platform/server: /control, /metrics) answering GET /v1/ping, which is its own gateway.
func echoSystem(t *testing.T) scenario.Target {
	t.Helper()
	run := func(ctx context.Context, _ []string, getenv func(string) string, stdout, _ io.Writer) error {
		return server.Main(ctx, server.Spec{Name: "echo", HTTPAddr: ":0"}, getenv, stdout, func(context.Context, *server.Server) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "pong") }), nil
		})
	}
	p := testkit.RunProcess(t, run, map[string]string{"SHUTDOWN_TIMEOUT": "2s"})
	return scenario.Target{Gateway: p.HTTPURL, Services: map[string][]string{"echo": {p.HTTPURL}}}
}

// probeScenario is testdata/probe.yaml: 20 requests a second at the echo system, with an
// outage knob.
func probeScenario(t *testing.T) scenario.Scenario {
	t.Helper()
	b, err := os.ReadFile("testdata/probe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse(b)
	if err != nil {
		t.Fatalf("parse testdata/probe.yaml: %v", err)
	}
	return sc
}

// playgroundServer serves the playground's routes for scenarios against target, until the
// test ends or the returned cancel (the process stopping) is called.
func playgroundServer(t *testing.T, list []scenario.Scenario, target func() (scenario.Target, error)) (*httptest.Server, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rs := newRuns(ctx, list, target, scenario.Options{}, nil)
	srv := httptest.NewServer(handler(ctx, rs, nil))
	t.Cleanup(func() {
		cancel()
		srv.Close()
		// Runs end with the process's context; wait for them so their requests stop before
		// the system they drive does.
		wait, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		if err := rs.close(wait); err != nil {
			t.Errorf("runs.close = %v, want nil", err)
		}
	})
	return srv, cancel
}

type sseEvent struct {
	name string
	data string
}

// openStream opens a run's event stream; the channel closes when the stream ends.
func openStream(t *testing.T, url string) <-chan sseEvent {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("GET %s = %d %q, want 200 text/event-stream", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return out
}

// next returns the stream's next event named one of names, skipping others; it fails the
// test after within, or when the stream ends.
func next(t *testing.T, events <-chan sseEvent, within time.Duration, names ...string) sseEvent {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the event stream ended while waiting for %v", names)
			}
			for _, n := range names {
				if ev.name == n {
					return ev
				}
			}
		case <-deadline:
			t.Fatalf("no %v event within %v", names, within)
		}
	}
}

// sampleWhere waits for a sample that satisfies cond.
func sampleWhere(t *testing.T, events <-chan sseEvent, within time.Duration, what string, cond func(scenario.Sample) bool) scenario.Sample {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ev := next(t, events, time.Until(deadline), "sample")
		var s scenario.Sample
		if err := json.Unmarshal([]byte(ev.data), &s); err != nil {
			t.Fatalf("decode sample %s: %v", ev.data, err)
		}
		if cond(s) {
			return s
		}
	}
	t.Fatalf("no sample where %s within %v", what, within)
	return scenario.Sample{}
}

func call(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	var in io.Reader
	if raw, ok := body.([]byte); ok {
		in = bytes.NewReader(raw)
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, in)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// TestRunThroughTheAPI drives one run the way the page does — start, follow, turn a knob,
// join late, stop — against a real system, and checks each answer against what the system
// did.
func TestRunThroughTheAPI(t *testing.T) {
	target := echoSystem(t)
	srv, _ := playgroundServer(t, []scenario.Scenario{probeScenario(t)}, func() (scenario.Target, error) { return target, nil })
	api := srv.URL + "/api"

	status, body := call(t, "GET", api+"/scenarios", nil)
	list := decode[struct {
		Scenarios        []scenario.Scenario
		DecisionPaths    []scenario.DecisionPath `json:"decision_paths"`
		OtherPathColours []string                `json:"other_path_colours"`
	}](t, body)
	if status != http.StatusOK || len(list.Scenarios) != 1 || list.Scenarios[0].Name != "probe" || len(list.Scenarios[0].Knobs) != 2 {
		t.Fatalf("GET /api/scenarios = %d %s, want 200 and the probe scenario with its 2 knobs", status, body)
	}
	// The page draws the limiter's decisions as the report does: it is given the colours.
	if len(list.DecisionPaths) != len(scenario.DecisionPaths) || list.DecisionPaths[0] != scenario.DecisionPaths[0] || len(list.OtherPathColours) == 0 {
		t.Errorf("GET /api/scenarios gives decision paths %+v and other colours %v, want scenario.DecisionPaths and its other colours", list.DecisionPaths, list.OtherPathColours)
	}

	status, body = call(t, "POST", api+"/runs", map[string]string{"scenario": "probe", "profile": "short"})
	started := decode[runInfo](t, body)
	if status != http.StatusAccepted || started.ID == "" || started.Scenario != "probe" || started.Profile != "short" {
		t.Fatalf("POST /api/runs = %d %s, want 202 with the run's id", status, body)
	}
	runURL := api + "/runs/" + started.ID

	if status, body := call(t, "POST", api+"/runs", map[string]string{"scenario": "probe"}); status != http.StatusConflict || !strings.Contains(string(body), started.ID) {
		t.Errorf("a second POST /api/runs while %s runs = %d %s, want 409 naming it", started.ID, status, body)
	}

	events := openStream(t, runURL+"/events")
	first := next(t, events, 5*time.Second, "state", "sample", "event")
	if first.name != "state" {
		t.Errorf("first event = %s, want state", first.name)
	}
	ok := sampleWhere(t, events, 15*time.Second, "requests are answered 2xx", func(s scenario.Sample) bool { return s.OK > 0 && s.Unavailable == 0 })
	if ok.P99 <= 0 || ok.Sent == 0 {
		t.Errorf("a sample with %d 2xx has p99 %v and %d sent, want both positive", ok.OK, ok.P99, ok.Sent)
	}

	knobTests := []struct {
		name   string
		body   map[string]string
		status int
		want   string
	}{
		{"unknown knob", map[string]string{"name": "turbo", "value": "on"}, http.StatusBadRequest, `has no knob`},
		{"value outside the options", map[string]string{"name": "outage", "value": "sideways"}, http.StatusUnprocessableEntity, "sideways"},
		{"take the backend down", map[string]string{"name": "outage", "value": "down"}, http.StatusOK, `"value":"down"`},
	}
	for _, tt := range knobTests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, "POST", runURL+"/knobs", tt.body)
			if status != tt.status || !strings.Contains(string(body), tt.want) {
				t.Errorf("POST knobs %v = %d %s, want %d containing %q", tt.body, status, body, tt.status, tt.want)
			}
		})
	}
	// The knob reached the system: its control hook now answers 503, and the stream says so.
	sampleWhere(t, events, 10*time.Second, "the outage shows as 503s", func(s scenario.Sample) bool { return s.Unavailable > 0 && s.OK == 0 })

	// A page opened now gets the run from its start: every sample, the knob on the timeline.
	late := openStream(t, runURL+"/events")
	if ev := next(t, late, 5*time.Second, "sample"); decode[scenario.Sample](t, []byte(ev.data)).T != 0 {
		t.Errorf("a late joiner's first sample = %s, want the run's first second (t 0)", ev.data)
	}
	for {
		ev := next(t, late, 5*time.Second, "event")
		if e := decode[scenario.Event](t, []byte(ev.data)); e.Kind == "knob" && strings.Contains(e.What, "outage") {
			break
		}
	}

	if status, body := call(t, "POST", runURL+"/stop", nil); status != http.StatusAccepted {
		t.Fatalf("POST stop = %d %s, want 202", status, body)
	}
	res := decode[scenario.Result](t, []byte(next(t, events, 15*time.Second, "result").data))
	if len(res.Series) == 0 || !res.Stopped || len(res.Expectations) != 0 {
		t.Errorf("result = %d samples, stopped %v, expectations %+v; want the series, stopped, and no verdict on a cut-short run", len(res.Series), res.Stopped, res.Expectations)
	}
	if _, open := <-events; open {
		for range events { // drain: the stream must end after the result
		}
	}

	status, body = call(t, "GET", runURL, nil)
	final := decode[runInfo](t, body)
	if status != http.StatusOK || final.State != stateDone || final.Result == nil || len(final.Result.Series) != len(res.Series) {
		t.Errorf("GET %s = %d state %q, want 200, done, and the streamed result", runURL, status, final.State)
	}
	if status, _ := call(t, "POST", runURL+"/knobs", map[string]string{"name": "outage", "value": "off"}); status != http.StatusConflict {
		t.Errorf("POST knobs on a finished run = %d, want 409", status)
	}
	// The run put the system back as it found it: the service answers again.
	resp, err := http.Get(target.Gateway + "/v1/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/ping after the run = %d, want 200 (the outage undone)", resp.StatusCode)
	}

	// The system is free again: a new run starts, shortened to 3s, and runs to its end, where
	// its expectations are checked.
	status, body = call(t, "POST", api+"/runs", map[string]string{"scenario": "probe", "duration": "3s"})
	second := decode[runInfo](t, body)
	if status != http.StatusAccepted || second.ID == started.ID {
		t.Fatalf("POST /api/runs after the first ended = %d %s, want 202 and a new id", status, body)
	}
	res = decode[scenario.Result](t, []byte(next(t, openStream(t, api+"/runs/"+second.ID+"/events"), 20*time.Second, "result").data))
	if res.Stopped || len(res.Expectations) != 1 || !res.Expectations[0].Passed {
		t.Errorf("result of a whole run = stopped %v, expectations %+v; want the one expectation met", res.Stopped, res.Expectations)
	}
	status, body = call(t, "GET", api+"/runs", nil)
	if runs := decode[struct{ Runs []runInfo }](t, body).Runs; status != http.StatusOK || len(runs) != 2 || runs[0].ID != second.ID {
		t.Errorf("GET /api/runs = %d %s, want both runs, newest first", status, body)
	}
}

func TestRunThatCannotStart(t *testing.T) {
	srv, _ := playgroundServer(t, []scenario.Scenario{probeScenario(t)}, func() (scenario.Target, error) {
		return scenario.Target{}, errors.New("no system to drive")
	})
	status, body := call(t, "POST", srv.URL+"/api/runs", map[string]string{"scenario": "probe"})
	if status != http.StatusAccepted {
		t.Fatalf("POST /api/runs = %d %s, want 202 (the failure comes while starting)", status, body)
	}
	id := decode[runInfo](t, body).ID
	events := openStream(t, srv.URL+"/api/runs/"+id+"/events")
	var last runInfo
	for ev := range events {
		if ev.name == "state" {
			last = decode[runInfo](t, []byte(ev.data))
		}
	}
	if last.State != stateFailed || !strings.Contains(last.Error, "no system to drive") {
		t.Errorf("last state event = %+v, want failed with the reason", last)
	}
	// The failed run does not hold the system.
	if status, body := call(t, "POST", srv.URL+"/api/runs", map[string]string{"scenario": "probe"}); status != http.StatusAccepted {
		t.Errorf("POST /api/runs after a failed start = %d %s, want 202", status, body)
	}
}

func TestRunRequestErrors(t *testing.T) {
	srv, _ := playgroundServer(t, []scenario.Scenario{probeScenario(t)}, func() (scenario.Target, error) {
		return scenario.Target{}, errors.New("not used")
	})
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		want   string
	}{
		{"unknown scenario", "POST", "/api/runs", map[string]string{"scenario": "nope"}, http.StatusBadRequest, `no scenario \"nope\"`},
		{"unknown profile", "POST", "/api/runs", map[string]string{"scenario": "probe", "profile": "long"}, http.StatusBadRequest, `no profile \"long\"`},
		{"too short a duration", "POST", "/api/runs", map[string]string{"scenario": "probe", "duration": "10ms"}, http.StatusBadRequest, `"field":"duration"`},
		{"too long a duration", "POST", "/api/runs", map[string]string{"scenario": "probe", "duration": "100000h"}, http.StatusBadRequest, `"field":"duration"`},
		{"just over the longest duration", "POST", "/api/runs", map[string]string{"scenario": "probe", "duration": "10m1s"}, http.StatusBadRequest, "from 1s to 10m0s"},
		{"not JSON", "POST", "/api/runs", []byte("scenario=probe"), http.StatusBadRequest, "not valid JSON"},
		{"unknown run", "GET", "/api/runs/r99", nil, http.StatusNotFound, `no run \"r99\"`},
		{"events of an unknown run", "GET", "/api/runs/r99/events", nil, http.StatusNotFound, `no run \"r99\"`},
		{"knobs of an unknown run", "POST", "/api/runs/r99/knobs", map[string]string{"name": "outage", "value": "down"}, http.StatusNotFound, `no run \"r99\"`},
		{"stop an unknown run", "POST", "/api/runs/r99/stop", nil, http.StatusNotFound, `no run \"r99\"`},
		// Last: it starts a run (which fails at once: no system), so later starts would clash.
		{"the longest duration", "POST", "/api/runs", map[string]string{"scenario": "probe", "duration": "10m"}, http.StatusAccepted, `"id":"r1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, tt.method, srv.URL+tt.path, tt.body)
			if status != tt.status || !strings.Contains(string(body), tt.want) {
				t.Errorf("%s %s = %d %s, want %d containing %q", tt.method, tt.path, status, body, tt.status, tt.want)
			}
		})
	}
}

// TestEventStreamEndsWithTheProcess: an open stream must not hold up a graceful shutdown, so
// it ends when the process's context does, even while its run goes on.
func TestEventStreamEndsWithTheProcess(t *testing.T) {
	target := echoSystem(t)
	srv, stopProcess := playgroundServer(t, []scenario.Scenario{probeScenario(t)}, func() (scenario.Target, error) { return target, nil })
	_, body := call(t, "POST", srv.URL+"/api/runs", map[string]string{"scenario": "probe"})
	events := openStream(t, srv.URL+"/api/runs/"+decode[runInfo](t, body).ID+"/events")
	next(t, events, 15*time.Second, "sample")

	stopProcess()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, open := <-events:
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("the event stream was still open 5s after the process stopped")
		}
	}
}
