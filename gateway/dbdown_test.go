package gateway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestStartsWithDatabaseDown starts the gateway while its DATABASE_URL does not answer: it
// serves from the policy file, and the admin API's edits answer 503 problem+json rather
// than failing or holding an edit on this replica alone.
func TestStartsWithDatabaseDown(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	dead := fmt.Sprintf("postgres://postgres:postgres@127.0.0.1:%d/gateway?sslmode=disable", testkit.FreePort(t))
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "DATABASE_URL": dead, "RATE_LIMIT_RULE_REFRESH": "100ms"})

	if res := gw.call(t, "GET", "/v1/public", ""); res.status != http.StatusOK {
		t.Errorf("GET /v1/public with the database down = %d %s, want 200", res.status, res.body)
	}
	if got := gw.call(t, "GET", "/v1/shadowed", "").status; got != http.StatusOK {
		t.Errorf("GET /v1/shadowed = %d, want 200: the file's limit is in shadow", got)
	}
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/admin/limits/shadow-per-ip", `{"mode":"enforce"}`},
		{"DELETE", "/admin/edits", ""},
		{"GET", "/admin/edits", ""},
		{"PUT", "/admin/tenant-limits/ten_a/search", `{"capacity":5,"refill_per_second":1}`},
	} {
		res := do(t, c.method, gw.admin+c.path, c.body, "Authorization", "Bearer "+adminToken)
		if res.status != http.StatusServiceUnavailable || !strings.HasPrefix(res.header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s %s with the database down = %d %s %s, want 503 problem+json", c.method, c.path, res.status, res.header.Get("Content-Type"), res.body)
		}
	}
	if got := gw.call(t, "GET", "/v1/shadowed", "").status; got != http.StatusOK {
		t.Errorf("GET /v1/shadowed after a refused edit = %d, want 200: the edit was not applied", got)
	}
}

// TestDatabaseUpAfterStart starts the gateway on a PostgreSQL it cannot reach yet (a port
// nothing listens on, later forwarded to the real server): once the database answers, the
// gateway migrates it, and an admin edit is stored and enforced.
func TestDatabaseUpAfterStart(t *testing.T) {
	testkit.ForEachDatabaseURL(t, "gateway", func(t *testing.T, databaseURL string) {
		if databaseURL == "" {
			t.Skip("a SQLite file cannot be down")
		}
		u, target := viaRelay(t, databaseURL)
		be := newBackend(t)
		rd := testkit.StartRedis(t)
		gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "DATABASE_URL": u.String(), "RATE_LIMIT_RULE_REFRESH": "100ms"})
		edit := func() (int, string) {
			return gw.adminCall(t, "PATCH", "/admin/limits/shadow-per-ip", `{"mode":"enforce"}`)
		}
		if code, body := edit(); code != http.StatusServiceUnavailable {
			t.Fatalf("PATCH with the database down = %d %s, want 503", code, body)
		}

		forward(t, u.Host, target)
		testkit.Eventually(t, 15*time.Second, "the edit stored once the database answers", func() bool {
			code, _ := edit()
			return code == http.StatusOK
		})
		if code, body := gw.adminCall(t, "GET", "/admin/edits", ""); code != http.StatusOK || !strings.Contains(body, `"id":"shadow-per-ip"`) {
			t.Errorf("GET /admin/edits = %d %s, want the stored edit", code, body)
		}
		if codes := []int{gw.call(t, "GET", "/v1/shadowed", "").status, gw.call(t, "GET", "/v1/shadowed", "").status}; codes[1] != http.StatusTooManyRequests {
			t.Errorf("GET /v1/shadowed twice after the edit = %v, want the second denied", codes)
		}
	})
}

// TestDatabaseLostAfterStart stops the database under a running gateway: an admin edit
// then answers 503 problem+json, try again later, as it does when the database was never
// reached, and the routes go on serving.
func TestDatabaseLostAfterStart(t *testing.T) {
	testkit.ForEachDatabaseURL(t, "gateway", func(t *testing.T, databaseURL string) {
		if databaseURL == "" {
			t.Skip("a SQLite file cannot be down")
		}
		u, target := viaRelay(t, databaseURL)
		stop := forward(t, u.Host, target)
		be := newBackend(t)
		rd := testkit.StartRedis(t)
		gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "DATABASE_URL": u.String(), "RATE_LIMIT_RULE_REFRESH": "100ms"})
		if code, body := gw.adminCall(t, "PATCH", "/admin/limits/shadow-per-ip", `{"mode":"enforce"}`); code != http.StatusOK {
			t.Fatalf("PATCH with the database up = %d %s, want 200", code, body)
		}

		stop()
		for _, c := range []struct{ method, path, body string }{
			{"PATCH", "/admin/limits/shadow-per-ip", `{"mode":"shadow"}`},
			{"GET", "/admin/edits", ""},
			{"PUT", "/admin/tenant-limits/ten_a/search", `{"capacity":5,"refill_per_second":1}`},
		} {
			res := do(t, c.method, gw.admin+c.path, c.body, "Authorization", "Bearer "+adminToken)
			if res.status != http.StatusServiceUnavailable || !strings.HasPrefix(res.header.Get("Content-Type"), "application/problem+json") || res.header.Get("Retry-After") == "" {
				t.Errorf("%s %s with the database lost = %d %s Retry-After %q %s, want 503 problem+json with Retry-After",
					c.method, c.path, res.status, res.header.Get("Content-Type"), res.header.Get("Retry-After"), res.body)
			}
		}
		if res := gw.call(t, "GET", "/v1/public", ""); res.status != http.StatusOK {
			t.Errorf("GET /v1/public with the database lost = %d %s, want 200", res.status, res.body)
		}
	})
}

// viaRelay returns databaseURL with its host replaced by a free loopback port, and the real
// host: the database is unreachable there until the test forwards the port to target.
func viaRelay(t *testing.T, databaseURL string) (relayed *url.URL, target string) {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	target = u.Host
	u.Host = fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	return u, target
}

// forward listens on from and relays every connection to to, until the test ends or stop is
// called, which closes the listener and every relayed connection: the database is gone.
func forward(t *testing.T, from, to string) (stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", from)
	if err != nil {
		t.Fatalf("listen %s: %v", from, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = l.Close()
			mu.Lock()
			for _, c := range conns {
				_ = c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				_ = in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			for _, pair := range [][2]net.Conn{{in, out}, {out, in}} {
				wg.Go(func() {
					_, _ = io.Copy(pair[0], pair[1])
					_ = pair[0].Close()
				})
			}
		}
	})
	return stop
}
