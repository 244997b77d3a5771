// Package testkit starts the real dependencies BoxOffice tests run against: a redis-server on a
// free loopback port, a three-node Redis Cluster, an embedded NATS server with JetStream, and
// SQLite/PostgreSQL databases.
//
// A missing dependency skips the test on a developer's machine but fails it when CI is set:
// in CI a green run must mean the real thing was exercised.
package testkit

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Missing reports that a real dependency is not installed. It skips the test locally and
// fails it in CI.
func Missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required in CI but is not available", what)
	}
	t.Skipf("%s is not available; install it to run this test", what)
}

// LookPath finds a binary or reports it missing through Missing.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name)
	}
	return p
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Eventually polls cond every 10ms until it returns true or the deadline passes.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
