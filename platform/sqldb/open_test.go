package sqldb_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// TestOpenWaitsForPostgres starts with a database that hangs up on every connection, as a
// server still setting itself up does, and that answers from the third connection on: Open
// keeps trying, logs each failed attempt, and returns a working pool.
func TestOpenWaitsForPostgres(t *testing.T) {
	admin := postgresURL(t)
	const drops = 2
	proxy := startLateProxy(t, admin.Host, drops)
	u := *admin
	u.Host = proxy.addr

	var logs testkit.Buffer
	db, err := sqldb.Open(timeout(t), sqldb.Options{URL: u.String(), Wait: 20 * time.Second, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("Open(a database that appears after %d connections) = %v, want a pool", drops, err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(timeout(t), `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 = %d, %v; want 1", one, err)
	}
	if got := proxy.dropped.Load(); got != drops {
		t.Errorf("connections dropped = %d, want %d", got, drops)
	}
	if got := retries(t, logs.String()); len(got) == 0 {
		t.Errorf("Open logged no retry; log:\n%s", logs.String())
	}
}

// TestOpenGivesUp: a server that never answers fails Open once Wait has passed, with the
// reason of the last attempt, after pauses that double from the first.
func TestOpenGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: every connection is refused

	var logs testkit.Buffer
	const wait = 1500 * time.Millisecond
	_, err = sqldb.Open(timeout(t), sqldb.Options{
		URL:  "postgres://boxoffice:boxoffice@" + addr + "/catalog?sslmode=disable",
		Wait: wait,
		Log:  slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err == nil {
		t.Fatal("Open(nothing listening) = a pool, want an error")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "not reachable within 1.5s") {
		t.Errorf("Open(nothing listening) = %v, want connection refused, not reachable within 1.5s", err)
	}
	pauses := retries(t, logs.String())
	if len(pauses) < 2 {
		t.Fatalf("Open logged %d retries within %v, want at least 2; log:\n%s", len(pauses), wait, logs.String())
	}
	if pauses[0] != 250*time.Millisecond {
		t.Errorf("first pause = %v, want 250ms", pauses[0])
	}
	for i := 1; i < len(pauses); i++ {
		if pauses[i] != 2*pauses[i-1] {
			t.Errorf("pauses = %v, want each double the one before", pauses)
			break
		}
	}
}

// TestOpenRefusedAtOnce: a server that answers with a refusal (here a wrong password) fails
// Open at once, Wait or not: trying again would not change its answer.
func TestOpenRefusedAtOnce(t *testing.T) {
	u := postgresURL(t)
	u.User = url.UserPassword(u.User.Username(), "not-the-password")
	var logs testkit.Buffer
	_, err := sqldb.Open(timeout(t), sqldb.Options{URL: u.String(), Wait: time.Minute, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err == nil || !strings.Contains(err.Error(), "28P01") {
		t.Errorf("Open(wrong password) = %v, want SQLSTATE 28P01 (invalid_password)", err)
	}
	if got := retries(t, logs.String()); len(got) != 0 {
		t.Errorf("Open(wrong password) retried %d times, want none; log:\n%s", len(got), logs.String())
	}
}

// postgresURL is the test server's admin URL (testkit.PostgresEnv).
func postgresURL(t *testing.T) *url.URL {
	t.Helper()
	admin := os.Getenv(testkit.PostgresEnv)
	if admin == "" {
		testkit.Missing(t, "PostgreSQL ("+testkit.PostgresEnv+")")
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", testkit.PostgresEnv, err)
	}
	return u
}

// retries returns the pause of every "trying again" line of Open's JSON log, in order.
func retries(t *testing.T, log string) []time.Duration {
	t.Helper()
	var out []time.Duration
	for line := range strings.Lines(log) {
		var rec struct {
			Msg   string        `json:"msg"`
			Pause time.Duration `json:"pause"` // slog's JSON handler writes nanoseconds
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == "database not reachable yet, trying again" {
			out = append(out, rec.Pause)
		}
	}
	return out
}

// lateProxy is a TCP proxy on loopback that hangs up on its first connections, and forwards
// the later ones to a target.
type lateProxy struct {
	addr    string
	dropped atomic.Int64
}

// startLateProxy starts a proxy to target that drops its first drops connections. It stops,
// closing every connection, when the test ends.
func startLateProxy(t *testing.T, target string, drops int64) *lateProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lateProxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	var (
		mu     sync.Mutex
		open   []net.Conn
		closed bool
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		closed = true
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed at cleanup
			}
			if p.dropped.Load() < drops {
				p.dropped.Add(1)
				c.Close()
				continue
			}
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, up)
			if closed { // accepted while the test ended
				c.Close()
				up.Close()
			}
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(up, c); up.Close() })
			wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
		}
	})
	return p
}
