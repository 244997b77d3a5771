package testkit

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// How long RunProcess waits for /healthz, and Stop for Run to return after its context is
// cancelled: above the default SHUTDOWN_TIMEOUT (10s), so a slow drain is reported by Run
// itself rather than cut short here.
const (
	startWithin = 15 * time.Second
	stopWithin  = 20 * time.Second
)

// RunFunc is a deployable's entry point, the shape of server.RunFunc. testkit spells it out
// instead of importing package server: the platform packages server depends on use testkit
// in their own tests, which an import of server would make a cycle.
type RunFunc = func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// Process is one deployable's Run running in-process for a test, on loopback ports.
// Its methods are safe to call from the test's goroutines.
type Process struct {
	// HTTPURL is the base URL of the HTTP listener, http://host:port.
	HTTPURL string
	// GRPCAddr is the host:port of the gRPC listener.
	GRPCAddr string
	// Env is what Run's getenv answers: the test's variables and RunProcess's defaults.
	// Change it only while the process is stopped; Start reads it.
	Env map[string]string

	run RunFunc

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error // nil while stopped
}

// RunProcess runs run the way `boxoffice up` does, with env plus what a test needs and did
// not set: HTTP_ADDR and GRPC_ADDR on free loopback ports, DATA_DIR in a temporary
// directory, LOG_LEVEL error (the process's output is discarded). It waits until /healthz
// answers 200, failing the test if Run returns first, and stops the process when the test
// ends, failing it if Run then returns an error.
//
// Addresses given in env are used as they are (a test that must tell one service another's
// address before both run picks the port with FreePort).
func RunProcess(t testing.TB, run RunFunc, env map[string]string) *Process {
	t.Helper()
	full := map[string]string{"LOG_LEVEL": "error"}
	maps.Copy(full, env)
	for _, k := range []string{"HTTP_ADDR", "GRPC_ADDR"} {
		if full[k] == "" {
			full[k] = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		}
	}
	if full["DATA_DIR"] == "" {
		full["DATA_DIR"] = t.TempDir()
	}
	p := &Process{HTTPURL: "http://" + full["HTTP_ADDR"], GRPCAddr: full["GRPC_ADDR"], Env: full, run: run}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("%s: Run = %v, want nil after cancel", p.HTTPURL, err)
		}
	})
	p.Start(t)
	return p
}

// Start runs the process again after Stop, with the same Env: the same ports and data
// directory, as a restarted instance. It waits for /healthz as RunProcess does.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	if p.done != nil {
		p.mu.Unlock()
		t.Fatalf("%s: Start while running", p.HTTPURL)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p.cancel, p.done = cancel, done
	env := maps.Clone(p.Env)
	p.mu.Unlock()

	go func() { done <- p.run(ctx, nil, func(k string) string { return env[k] }, io.Discard, io.Discard) }()
	Eventually(t, startWithin, p.HTTPURL+"/healthz answers 200", func() bool {
		select {
		case err := <-done:
			p.mu.Lock()
			p.cancel, p.done = nil, nil
			p.mu.Unlock()
			cancel()
			t.Fatalf("%s: Run returned before serving: %v", p.HTTPURL, err)
		default:
		}
		return p.status("/healthz") == http.StatusOK
	})
}

// Stop cancels Run's context and returns what Run returned; nil when the process is not
// running. It gives up, with an error, if Run has not returned within 20s.
func (p *Process) Stop() error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.cancel, p.done = nil, nil
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	deadline := time.NewTimer(stopWithin)
	defer deadline.Stop()
	select {
	case err := <-done:
		return err
	case <-deadline.C:
		return fmt.Errorf("run did not return within %v of cancel", stopWithin)
	}
}

// Ready reports whether /readyz answers 200; for Eventually, when a test needs the process
// ready and not only alive.
func (p *Process) Ready() bool { return p.status("/readyz") == http.StatusOK }

// Dial returns a gRPC client connection to the process, closed when the test ends.
func (p *Process) Dial(t testing.TB) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", p.GRPCAddr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// probe bounds one health request, so a wedged process fails Eventually instead of
// hanging it.
var probe = &http.Client{Timeout: 2 * time.Second}

// status is the status code of GET path, or 0 when the request fails.
func (p *Process) status(path string) int {
	res, err := probe.Get(p.HTTPURL + path)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}
