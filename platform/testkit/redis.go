package testkit

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a real redis-server process on a loopback port, owned by one test.
// Stop and Start let a test take the store away and bring it back on the same address.
type Redis struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedis starts redis-server on a free loopback port and stops it when the test ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	r := &Redis{t: t, bin: LookPath(t, "redis-server"), dir: t.TempDir(), port: FreePort(t)}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// URL is the redis:// URL of the server.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Client returns a new client for the server, closed when the test ends.
func (r *Redis) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Start (re)starts the server on its port and waits until it answers PING.
func (r *Redis) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	args := append([]string{
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir,
		"--logfile", filepath.Join(r.dir, "redis.log"),
	}, r.args...)
	cmd := exec.Command(r.bin, args...)
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.cmd = cmd
	if err := waitPing(r.Addr(), 5*time.Second); err != nil {
		r.t.Fatalf("redis-server on %s: %v", r.Addr(), err)
	}
}

// Stop kills the server (as a crash would) and waits for it to exit. Safe to call twice.
func (r *Redis) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

func waitPing(addr string, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING answer within %v: %w", within, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
