package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
)

// startMain runs server.Main in-process the way a deployable's Run does and waits for
// /healthz. It returns the base URL and a stop func that cancels and returns Main's error.
func startMain(t *testing.T, env map[string]string, build server.Build) (string, func() error) {
	t.Helper()
	return startSpec(t, server.Spec{Name: "probe", HTTPAddr: ":0"}, env, build)
}

// startSpec is startMain for a component of the given spec.
func startSpec(t *testing.T, spec server.Spec, env map[string]string, build server.Build) (string, func() error) {
	t.Helper()
	return startSpecTo(t, spec, env, build, tlog{t})
}

// startSpecTo is startSpec with the process's log lines written to out.
func startSpecTo(t *testing.T, spec server.Spec, env map[string]string, build server.Build, out io.Writer) (string, func() error) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	base := map[string]string{"HTTP_ADDR": addr, "DATA_DIR": t.TempDir(), "SHUTDOWN_TIMEOUT": "2s", "DRAIN_DELAY": "0s"}
	for k, v := range env {
		base[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Main(ctx, spec, func(k string) string { return base[k] }, out, build)
	}()
	url := "http://" + addr
	testkit.Eventually(t, 5*time.Second, "GET /healthz answers 200", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Main returned before serving: %v", err)
		default:
		}
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("Main did not return within 5s of cancel")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return url, stop
}

func TestMainServesPlatformEndpointsAndRoutes(t *testing.T) {
	url, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }), nil
	})
	tests := []struct {
		path, want string
		status     int
	}{
		{"/healthz", `"status":"ok"`, 200},
		{"/readyz", `"ready":true`, 200},
		{"/metrics", "go_goroutines", 200},
		{"/control", `"max_concurrent"`, 200},
		{"/anything", "hello", 200},
		{"/anything/caf%C3%A9?city=S%C3%A3o+Paulo", "hello", 200},
		{"/anything/a%00b", `"field":"path"`, 400},
		{"/anything?q=a%00b", `"field":"q"`, 400},
		{"/anything?q=line+one%0Aline+two", "hello", 200},
		{"/anything/%FF/seats", `"field":"path"`, 400},
	}
	for _, tt := range tests {
		resp, err := http.Get(url + tt.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tt.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
			t.Errorf("GET %s = %d %q, want %d containing %q", tt.path, resp.StatusCode, b, tt.status, tt.want)
		}
	}
	// The service's route was measured into its own registry.
	resp, _ := http.Get(url + "/metrics")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "http_server_request_duration_seconds") {
		t.Errorf("/metrics has no http server duration after a request")
	}
	if err := stop(); err != nil {
		t.Fatalf("Main after cancel = %v, want nil", err)
	}
}

func TestMainFailsOnBadConfigNamingTheVariable(t *testing.T) {
	err := server.Main(context.Background(), server.Spec{Name: "probe", HTTPAddr: ":0"},
		func(k string) string { return map[string]string{"SHUTDOWN_TIMEOUT": "soon"}[k] }, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "SHUTDOWN_TIMEOUT") {
		t.Fatalf("Main with a bad SHUTDOWN_TIMEOUT = %v, want an error naming it", err)
	}
}

func TestMainDrainsInFlightRequest(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	url, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			io.WriteString(w, "done")
		}), nil
	})
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	<-entered
	stopErr := make(chan error, 1)
	go func() { stopErr <- stop() }()
	// Shutdown has begun with the request still in its handler; it must still complete.
	close(release)
	if body := <-got; body != "done" {
		t.Fatalf("in-flight request during shutdown = %q, want \"done\"", body)
	}
	if err := <-stopErr; err != nil {
		t.Fatalf("Main = %v, want nil after draining", err)
	}
}

func TestControlOverNATSReachesEveryReplica(t *testing.T) {
	ns := testkit.StartNATS(t)
	env := map[string]string{"NATS_URL": ns.ClientURL()}
	build := func(ctx context.Context, s *server.Server) (http.Handler, error) { return nil, nil }
	a, _ := startMain(t, env, build)
	b, _ := startMain(t, env, build)

	nc, err := natsconn.Connect(context.Background(), ns.ClientURL(), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	want := control.Knobs{MaxConcurrent: 3, ServiceTime: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := control.Publish(ctx, nc, "probe", want); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{a, b} {
		testkit.Eventually(t, 5*time.Second, url+" applies the published knobs", func() bool {
			resp, err := http.Get(url + "/control")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var got struct {
				MaxConcurrent int `json:"max_concurrent"`
			}
			return json.NewDecoder(resp.Body).Decode(&got) == nil && got.MaxConcurrent == 3
		})
	}
}

// tlog sends a process's log lines to the test log, shown when a test fails.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// A component that records its own RED metrics (the gateway) gets its caller's trace context
// but none of the platform's http.server metrics.
func TestMainOwnHTTPMetrics(t *testing.T) {
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	url, stop := startSpec(t, server.Spec{Name: "gateway", HTTPAddr: ":0", OwnHTTPMetrics: true}, nil,
		func(ctx context.Context, s *server.Server) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, trace.SpanContextFromContext(r.Context()).TraceID().String())
			}), nil
		})
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/anything", nil)
	req.Header.Set("traceparent", "00-"+callerTrace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != callerTrace {
		t.Errorf("handler saw trace id %q, want the caller's %s", b, callerTrace)
	}
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), "http_server_request_duration_seconds") {
		t.Errorf("/metrics has http.server series, want none for a component with its own")
	}
	if err := stop(); err != nil {
		t.Fatalf("Main after cancel = %v, want nil", err)
	}
}

// An edge component's public listener serves the health endpoints and its own routes,
// nothing else of the platform's: /metrics and /control reach its handler (which has no such
// route), paths arrive uncleaned instead of redirected, and bodies are not capped at the
// platform's 1 MiB.
func TestMainEdge(t *testing.T) {
	url, stop := startSpec(t, server.Spec{Name: "gateway", HTTPAddr: ":0", OwnHTTPMetrics: true, Edge: true}, nil,
		func(ctx context.Context, s *server.Server) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n, err := io.Copy(io.Discard, r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				fmt.Fprintf(w, "%s %s %d", r.Method, r.URL.Path, n)
			}), nil
		})
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		method, path string
		body         int
		status       int
		want         string // the body's start; "" = not checked
	}{
		{"GET", "/healthz", 0, 200, ""},
		{"GET", "/readyz", 0, 200, ""},
		{"GET", "/metrics", 0, 200, "GET /metrics 0"},
		{"PUT", "/control", 0, 200, "PUT /control 0"},
		{"GET", "/v1/a/../b", 0, 200, "GET /v1/a/../b 0"},
		{"GET", "//v1//b", 0, 200, "GET //v1//b 0"},
		{"GET", "/v1/a%00b?q=%FF", 0, 200, "GET /v1/a\x00b 0"},
		{"POST", "/v1/upload", 3 << 20, 200, "POST /v1/upload 3145728"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, url+tt.path, bytes.NewReader(make([]byte, tt.body)))
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.HasPrefix(string(b), tt.want) {
			t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, resp.StatusCode, b, tt.status, tt.want)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("Main after cancel = %v, want nil", err)
	}
}

// A misconfigured deployment learns every bad variable at once, the platform's and the
// component's, before anything starts.
func TestMainWithReportsEveryBadVariable(t *testing.T) {
	env := map[string]string{"SHUTDOWN_TIMEOUT": "soon", "BATCH_SIZE": "many"}
	built := false
	err := server.MainWith(context.Background(), server.Spec{Name: "probe", HTTPAddr: ":0"}, func(k string) string { return env[k] }, io.Discard,
		func(r *config.Reader) int { return r.Int("BATCH_SIZE", 10, 1, 100) },
		func(context.Context, *server.Server, int) (http.Handler, error) { built = true; return nil, nil })
	if err == nil {
		t.Fatal("MainWith with two bad variables = nil, want a configuration error")
	}
	for _, name := range []string{"probe: configuration", "SHUTDOWN_TIMEOUT", "BATCH_SIZE"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("MainWith error = %q, want it to name %s", err, name)
		}
	}
	if built {
		t.Error("the component was built despite its configuration errors")
	}
}

// NATS carries only events and control messages, and every replica shares it: losing it
// must not take the process out of rotation (which, on every replica at once, is an outage).
// The gauge nats_connected says it instead, and comes back to 1 with NATS.
func TestNATSOutageKeepsProcessReady(t *testing.T) {
	port := testkit.FreePort(t)
	store := t.TempDir()
	ns, err := natsconn.StartEmbedded(natsconn.EmbeddedOptions{StoreDir: store, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown() })
	url, _ := startMain(t, map[string]string{"NATS_URL": ns.ClientURL()}, nil)
	waitMetric(t, url, "nats_connected 1")
	if code, body := get(t, url+"/readyz"); code != http.StatusOK {
		t.Fatalf("GET /readyz with NATS up = %d %s, want 200", code, body)
	}

	ns.Shutdown()
	waitMetric(t, url, "nats_connected 0")
	if code, body := get(t, url+"/readyz"); code != http.StatusOK {
		t.Errorf("GET /readyz with NATS down = %d %s, want 200", code, body)
	}

	ns, err = natsconn.StartEmbedded(natsconn.EmbeddedOptions{StoreDir: store, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	waitMetric(t, url, "nats_connected 1")
}

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitMetric waits until the process's /metrics has a line starting with line.
func waitMetric(t *testing.T, url, line string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "/metrics has "+line, func() bool {
		_, body := get(t, url+"/metrics")
		for l := range strings.Lines(body) {
			if strings.HasPrefix(l, line) {
				return true
			}
		}
		return false
	})
}

// On shutdown /readyz fails while the listener still accepts connections, for DRAIN_DELAY,
// so balancers stop sending before connections are refused.
func TestShutdownFailsReadinessBeforeClosing(t *testing.T) {
	url, stop := startMain(t, map[string]string{"DRAIN_DELAY": "1s"}, nil)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	status := func() int { // 0 = connection refused
		resp, err := fresh.Get(url + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testkit.Eventually(t, 2*time.Second, "/readyz answers 503 after cancel", func() bool { return status() == http.StatusServiceUnavailable })
	testkit.Eventually(t, 3*time.Second, "connections refused after the drain delay", func() bool { return status() == 0 })
	if err := <-stopped; err != nil {
		t.Errorf("Main after cancel = %v, want nil", err)
	}
}

func TestMainRefusesBadDrainDelay(t *testing.T) {
	for _, v := range []string{"-1s", "soon"} {
		t.Run(v, func(t *testing.T) {
			err := server.Main(context.Background(), server.Spec{Name: "probe", HTTPAddr: ":0"},
				func(k string) string { return map[string]string{"DRAIN_DELAY": v}[k] }, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), "DRAIN_DELAY") {
				t.Errorf("Main with DRAIN_DELAY=%s = %v, want an error naming it", v, err)
			}
		})
	}
}

func TestListenServesAnInternalAPIUntilShutdown(t *testing.T) {
	var internal string
	url, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		addr, err := s.Listen("admin", "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "internal")
		}))
		if err != nil {
			return nil, err
		}
		internal = "http://" + addr.String()
		return nil, nil
	})
	if code, body := get(t, internal+"/anything"); code != http.StatusOK || body != "internal" {
		t.Errorf("GET on the internal listener = %d %q, want 200 %q", code, body, "internal")
	}
	if code, _ := get(t, url+"/anything"); code != http.StatusNotFound {
		t.Errorf("GET /anything on the public listener = %d, want 404: the internal handler is not served there", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("Main = %v, want nil", err)
	}
	if _, err := http.Get(internal + "/anything"); err == nil {
		t.Error("the internal listener still answers after Main returned, want it closed")
	}
}

func TestListenOnATakenAddressFailsTheBuild(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	err = server.Main(context.Background(), server.Spec{Name: "probe", HTTPAddr: "127.0.0.1:0"},
		func(k string) string { return map[string]string{"DATA_DIR": t.TempDir()}[k] }, tlog{t},
		func(ctx context.Context, s *server.Server) (http.Handler, error) {
			_, err := s.Listen("admin", taken.Addr().String(), http.NotFoundHandler())
			return nil, err
		})
	if err == nil || !strings.Contains(err.Error(), "listen admin") {
		t.Errorf("Main with the internal listener's address taken = %v, want an error naming listen admin", err)
	}
}

func TestRedisAllowDownServesReadyWithoutRedis(t *testing.T) {
	dead := "redis://127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	url, _ := startMain(t, map[string]string{"REDIS_URL": dead}, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		rd, err := s.RedisAllowDown(ctx)
		if err != nil {
			return nil, err
		}
		if rd == nil {
			return nil, errors.New("RedisAllowDown returned no client")
		}
		return nil, nil
	})
	if code, body := get(t, url+"/readyz"); code != http.StatusOK {
		t.Errorf("GET /readyz with Redis down = %d %s, want 200: RedisAllowDown adds no readiness check", code, body)
	}
}
