package deploycheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestEdgeNginx runs the edge's own nginx.conf in a real nginx, its gateway replicas replaced
// by two local servers (and, since nginx before 1.27.3 has no `resolve` in an upstream, without
// re-resolution): it spreads requests over both, replaces a client's X-Forwarded-For with the
// address it saw, answers its own limit with 429 and a problem+json naming edge-per-ip, and
// answers 503 with a problem+json when no replica answers.
func TestEdgeNginx(t *testing.T) {
	bin := testkit.LookPath(t, "nginx")
	w := loadWorkspace(t)
	src, err := os.ReadFile(filepath.Join(w.Root, "deploy", "compose", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}

	var hits [2]atomic.Int64
	var lastXFF atomic.Value
	replicas := make([]*httptest.Server, 2)
	for i := range replicas {
		replicas[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			lastXFF.Store(r.Header.Get("X-Forwarded-For"))
			w.Write([]byte("ok"))
		}))
		t.Cleanup(replicas[i].Close)
	}
	port, health := testkit.FreePort(t), testkit.FreePort(t)
	conf := string(src)
	for old, repl := range map[string]string{
		"server gateway-1:8080 resolve;": "server " + strings.TrimPrefix(replicas[0].URL, "http://") + ";",
		"server gateway-2:8080 resolve;": "server " + strings.TrimPrefix(replicas[1].URL, "http://") + ";",
		"listen 80;":                     fmt.Sprintf("listen 127.0.0.1:%d;", port),
		"listen 127.0.0.1:8081;":         fmt.Sprintf("listen 127.0.0.1:%d;", health),
	} {
		if !strings.Contains(conf, old) {
			t.Fatalf("nginx.conf has no %q to point at the test's servers", old)
		}
		conf = strings.Replace(conf, old, repl, 1)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-t", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "pid nginx.pid;").CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off; pid nginx.pid;")
	// SIGTERM, not the default SIGKILL: nginx's master stops its workers only when it is
	// asked, and a killed master leaves them listening.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })

	client := &http.Client{Timeout: 5 * time.Second}
	get := func(url string, header map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	edge := fmt.Sprintf("http://127.0.0.1:%d", port)
	testkit.Eventually(t, 10*time.Second, "the edge's healthcheck answers 200", func() bool {
		resp, _ := get(fmt.Sprintf("http://127.0.0.1:%d/healthz", health), nil)
		return resp != nil && resp.StatusCode == http.StatusOK
	})

	t.Run("spreads over the replicas and sets X-Forwarded-For", func(t *testing.T) {
		for range 20 {
			get(edge+"/v1/events", map[string]string{"X-Forwarded-For": "203.0.113.9"})
		}
		if hits[0].Load() == 0 || hits[1].Load() == 0 {
			t.Errorf("replica hits = %d, %d, want both above 0", hits[0].Load(), hits[1].Load())
		}
		if got := lastXFF.Load(); got != "127.0.0.1" {
			t.Errorf("X-Forwarded-For at the gateway = %q, want the address the edge saw, 127.0.0.1 (the client's own replaced)", got)
		}
	})

	t.Run("answers its own limit with 429 naming edge-per-ip", func(t *testing.T) {
		// 200/s with a burst of 400: well over 400 requests within a second or two.
		var resp *http.Response
		var body string
		for i := 0; i < 2000 && (resp == nil || resp.StatusCode != http.StatusTooManyRequests); i++ {
			resp, body = get(edge+"/v1/events", nil)
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("2000 requests in a row: no 429 from the edge (last %v %s)", resp, body)
		}
		var problem struct {
			Status   int      `json:"status"`
			Policies []string `json:"violated-policies"`
		}
		if err := json.Unmarshal([]byte(body), &problem); err != nil {
			t.Fatalf("429 body %q: %v", body, err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" || problem.Status != 429 || len(problem.Policies) != 1 || problem.Policies[0] != "edge-per-ip" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("429 = %s %q Retry-After %q, want application/problem+json naming edge-per-ip, with Retry-After", ct, body, resp.Header.Get("Retry-After"))
		}
	})

	t.Run("answers 503 when no replica answers", func(t *testing.T) {
		replicas[0].Close()
		replicas[1].Close()
		// Past the limit's burst: wait for the bucket to refill enough for one request.
		var resp *http.Response
		var body string
		testkit.Eventually(t, 10*time.Second, "the edge answers other than 429", func() bool {
			resp, body = get(edge+"/v1/events", nil)
			return resp != nil && resp.StatusCode != http.StatusTooManyRequests
		})
		if resp.StatusCode != http.StatusServiceUnavailable || !regexp.MustCompile(`the edge reached no gateway replica`).MatchString(body) {
			t.Errorf("no replica: %d %q, want 503 with the edge's problem+json", resp.StatusCode, body)
		}
	})
}
