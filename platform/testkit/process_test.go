package testkit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"boxoffice.dev/platform/server"
)

// probeRun is a deployable that serves GET /env/{name} (its getenv) and, when after is set,
// returns it from Run once stopped.
func probeRun(after error) server.RunFunc {
	return func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
		err := server.Main(ctx, server.Spec{Name: "probe"}, getenv, stdout, func(ctx context.Context, s *server.Server) (http.Handler, error) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /env/{name}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, getenv(r.PathValue("name"))) })
			return mux, nil
		})
		return errors.Join(err, after)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func TestRunProcessServesOnFreePortsWithItsDefaults(t *testing.T) {
	p := RunProcess(t, probeRun(nil), map[string]string{"LOG_LEVEL": "warn", "EXTRA": "kept"})

	if !strings.HasPrefix(p.HTTPURL, "http://127.0.0.1:") || !strings.HasPrefix(p.GRPCAddr, "127.0.0.1:") {
		t.Errorf("HTTPURL, GRPCAddr = %s, %s; want loopback addresses", p.HTTPURL, p.GRPCAddr)
	}
	tests := []struct{ name, want string }{
		{"EXTRA", "kept"},     // the test's own variable
		{"LOG_LEVEL", "warn"}, // the test's value wins over the default
		{"HTTP_ADDR", strings.TrimPrefix(p.HTTPURL, "http://")},
		{"GRPC_ADDR", p.GRPCAddr},
	}
	for _, tt := range tests {
		if got := get(t, p.HTTPURL+"/env/"+tt.name); got != tt.want {
			t.Errorf("getenv(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if dir := get(t, p.HTTPURL+"/env/DATA_DIR"); dir == "" {
		t.Error("DATA_DIR is empty, want a temporary directory")
	} else if _, err := os.Stat(dir); err != nil {
		t.Errorf("DATA_DIR %s: %v, want an existing directory", dir, err)
	}
	if !p.Ready() {
		t.Error("Ready() = false for a process without checks, want true")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := healthpb.NewHealthClient(p.Dial(t)).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health through Dial = %v, %v; want SERVING", res, err)
	}
}

func TestProcessStopAndStartAgain(t *testing.T) {
	p := RunProcess(t, probeRun(nil), nil)
	dir := get(t, p.HTTPURL+"/env/DATA_DIR")
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop() = %v, want nil", err)
	}
	if _, err := http.Get(p.HTTPURL + "/healthz"); err == nil {
		t.Error("GET /healthz after Stop succeeded, want the listener closed")
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop() again = %v, want nil for a stopped process", err)
	}
	p.Start(t)
	if got := get(t, p.HTTPURL+"/env/DATA_DIR"); got != dir {
		t.Errorf("DATA_DIR after a restart = %q, want the same %q", got, dir)
	}
}

func TestProcessStopReturnsRunsError(t *testing.T) {
	boom := errors.New("boom")
	p := RunProcess(t, probeRun(boom), nil)
	if err := p.Stop(); !errors.Is(err, boom) {
		t.Errorf("Stop() = %v, want Run's error %v", err, boom)
	}
}

func TestRunProcessFailsWhenRunEndsBeforeServing(t *testing.T) {
	bad := func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
		return errors.New("configuration: FOO is wrong")
	}
	got := record(t, func(tb testing.TB) { RunProcess(tb, bad, nil) })
	if len(got) != 1 || !strings.Contains(got[0], "Run returned before serving: configuration: FOO is wrong") {
		t.Errorf("RunProcess(a Run that fails) failures = %q, want one naming Run's error", got)
	}
}
