package testkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a real redis-server process on a loopback port, owned by one test.
// Stop and Start let a test take the store away and bring it back on the same address;
// Pause and Resume freeze it in place, as a stalled host or a long GC would.
type Redis struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string

	mu          sync.Mutex
	cmd         *exec.Cmd     // nil while stopped
	exited      chan struct{} // closed once cmd has exited
	paused      bool          // cmd is stopped by SIGSTOP
	resumeAtEnd bool          // a cleanup resumes the server (registered by the first Pause)
}

// StartRedis starts redis-server on a free loopback port and stops it when the test ends.
// Between finding the port free and binding it, another process may take it: the test then
// fails rather than use a store it does not own (see Start).
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	r := &Redis{t: t, bin: LookPath(t, "redis-server"), dir: t.TempDir(), port: FreePort(t)}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// StartRedisPersistent is StartRedis with an append-only file synced on every write, kept
// in the same directory across Stop and Start: what Redis acknowledged survives a kill, as
// it does for a Redis that holds quotas in production.
func StartRedisPersistent(t testing.TB) *Redis {
	t.Helper()
	r := &Redis{t: t, bin: LookPath(t, "redis-server"), dir: t.TempDir(), port: FreePort(t),
		args: []string{"--appendonly", "yes", "--appendfsync", "always"}}
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

// Start (re)starts the server on its port and waits until it answers. It fails the test
// when its redis-server exits before answering (the port was taken meanwhile, by another
// test's listener, say) or when another redis-server answers on the port: a test must never
// write to, flush or count on a store it does not own.
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
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // a kill or a failed bind; the log says which
		close(exited)
	}()
	if err := waitOwn(r.Addr(), cmd.Process.Pid, exited, 5*time.Second); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
		r.t.Fatalf("redis-server on %s: %v\n%s", r.Addr(), err, log)
	}
	r.cmd, r.exited = cmd, exited
}

// Stop kills the server (as a crash would) and waits for it to exit. Safe to call twice.
func (r *Redis) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill() // a stopped process dies of SIGKILL too
	<-r.exited
	r.cmd, r.exited, r.paused = nil, nil, false
}

// Pause freezes the server with SIGSTOP: its port still accepts connections, but nothing
// is answered until Resume. A cleanup resumes it before the cleanups registered earlier
// run, so that what the test started after the server (a gateway, say) stops against a
// live store. It fails the test when the server is not running.
func (r *Redis) Pause() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		r.t.Fatalf("pause redis-server on %s: not running", r.Addr())
	}
	if !r.resumeAtEnd {
		r.resumeAtEnd = true
		r.t.Cleanup(r.Resume)
	}
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		r.t.Fatalf("pause redis-server on %s: %v", r.Addr(), err)
	}
	r.paused = true
}

// Resume lets a paused server run again with SIGCONT. Safe to call when it is not paused.
func (r *Redis) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || !r.paused {
		return
	}
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		r.t.Errorf("resume redis-server on %s: %v", r.Addr(), err)
	}
	r.paused = false
}

// waitOwn waits until the redis-server at addr answers as process pid, which closes exited
// if it exits first.
func waitOwn(addr string, pid int, exited <-chan struct{}, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		select {
		case <-exited:
			return errors.New("exited before answering")
		default:
		}
		if err == nil {
			got, ok := infoField(info, "process_id")
			if ok && got == strconv.Itoa(pid) {
				return nil
			}
			return fmt.Errorf("another redis-server (process_id %q) answers there, not ours (pid %d)", got, pid)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", within, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// infoField returns the value of field in the text of an INFO reply (lines field:value).
func infoField(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}
