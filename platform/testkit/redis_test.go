package testkit

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedisStopStart(t *testing.T) {
	r := StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	r.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING after Stop succeeded, want an error")
	}
	r.Start()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
}

// A persistent server keeps what it acknowledged across a kill; a plain one starts empty.
func TestRedisPersistentSurvivesStop(t *testing.T) {
	tests := []struct {
		name  string
		start func(testing.TB) *Redis
		want  string // GET k after Stop and Start
	}{
		{"persistent", StartRedisPersistent, "v"},
		{"plain", StartRedis, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.start(t)
			c := r.Client()
			ctx := context.Background()
			if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			r.Stop()
			r.Start()
			got, err := c.Get(ctx, "k").Result()
			if err != nil && err != redis.Nil {
				t.Fatalf("GET after Stop and Start: %v", err)
			}
			if got != tt.want {
				t.Errorf("GET k after Stop and Start = %q, want %q", got, tt.want)
			}
		})
	}
}

// A paused server answers nothing; resumed, it answers again.
func TestRedisPauseResume(t *testing.T) {
	r := StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING before Pause: %v", err)
	}
	r.Pause()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING while paused succeeded, want a timeout")
	}
	r.Resume()
	Eventually(t, 5*time.Second, "PING answered after Resume", func() bool { return c.Ping(ctx).Err() == nil })
	// Left paused, the server is resumed by the cleanup Pause registered, then stopped.
	r.Pause()
}

func TestRedisClusterSpreadsKeys(t *testing.T) {
	rc := StartRedisCluster(t)
	c := rc.Client()
	ctx := context.Background()
	for i := range 50 {
		if err := c.Set(ctx, fmt.Sprintf("key-%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET key-%d: %v", i, err)
		}
	}
	// Every master should own some of 50 random keys; a single-slot setup would not.
	for _, n := range rc.Nodes {
		got, err := n.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on %s: %v", n.Addr(), err)
		}
		if got == 0 {
			t.Errorf("node %s holds 0 keys, want some", n.Addr())
		}
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends the goroutine,
// as the real one does, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs fn on its own goroutine with rec as its TB and returns what it failed with
// ("" when it did not).
func fatal(rec *fatalRecorder, fn func()) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
	return rec.msg
}

// Start on a port someone else took while the server was stopped fails the test, rather
// than adopt another redis-server that answers there (and flush its data) or wait for a
// PING its own exited server will never answer.
func TestRedisStartOnATakenPortFails(t *testing.T) {
	tests := []struct {
		name string
		take func(t *testing.T, addr string) // occupies addr until the test ends
		want string
	}{
		{"another redis-server", func(t *testing.T, addr string) {
			_, port, _ := net.SplitHostPort(addr)
			other := exec.Command(LookPath(t, "redis-server"), "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			Eventually(t, 5*time.Second, "the other redis-server answers", func() bool {
				return c.Set(context.Background(), "theirs", "1", 0).Err() == nil
			})
		}, "another redis-server"},
		{"a plain listener", func(t *testing.T, addr string) {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}, "exited before answering"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := StartRedis(t)
			r.Stop()
			tt.take(t, r.Addr())
			rec := &fatalRecorder{TB: t}
			r.t = rec
			if msg := fatal(rec, r.Start); !strings.Contains(msg, tt.want) {
				t.Errorf("Start() on a port taken by %s failed with %q, want %q", tt.name, msg, tt.want)
			}
			r.t = t
			r.mu.Lock()
			running := r.cmd != nil
			r.mu.Unlock()
			if running {
				t.Error("Start() on a taken port left r holding a process, want none")
			}
		})
	}
}
