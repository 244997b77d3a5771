package redisconn_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/testkit"
)

// The redis-server Resolve starts can be stalled, killed and brought back where its clients
// find it: what the playground's store-outage scenario does to the limiter's store.
func TestServerStallKillRestart(t *testing.T) {
	bin := testkit.LookPath(t, "redis-server")
	ctx := context.Background()
	r, err := redisconn.Resolve(ctx, redisconn.Options{RedisServerPath: bin, DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	defer r.Close()
	srv := r.Server
	if srv == nil {
		t.Fatal("Resolved.Server of a started redis-server = nil, want the process")
	}
	// A client that gives up quickly, as the gateway's limiter does.
	opts, _ := redis.ParseURL(r.URL)
	opts.ReadTimeout, opts.DialTimeout, opts.MaxRetries = 200*time.Millisecond, 200*time.Millisecond, -1
	c := redis.NewClient(opts)
	defer c.Close()
	ping := func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return c.Ping(pctx).Err()
	}
	if err := c.Set(ctx, "budget", "5", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	pid := srv.PID()

	if err := srv.Pause(); err != nil {
		t.Fatalf("Pause = %v", err)
	}
	if err := ping(); err == nil {
		t.Error("PING while paused = nil, want no answer in time")
	}
	if err := srv.Continue(); err != nil {
		t.Fatalf("Continue = %v", err)
	}
	testkit.Eventually(t, 5*time.Second, "PING answers after Continue", func() bool { return ping() == nil })
	if got, _ := c.Get(ctx, "budget").Result(); got != "5" || srv.PID() != pid {
		t.Errorf("after a stall: budget %q, pid %d; want \"5\" kept by the same process %d", got, srv.PID(), pid)
	}

	if err := srv.Kill(); err != nil {
		t.Fatalf("Kill = %v", err)
	}
	if err := ping(); err == nil || srv.PID() != 0 {
		t.Errorf("after Kill: PING = %v, PID = %d; want a refused connection and no process", err, srv.PID())
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("signal 0 to the killed process %d = %v, want no such process", pid, err)
	}
	if err := srv.Pause(); err == nil {
		t.Error("Pause of a killed server = nil, want an error")
	}
	if err := srv.Kill(); err != nil {
		t.Errorf("Kill of a killed server = %v, want nothing done", err)
	}

	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("Restart = %v", err)
	}
	if err := ping(); err != nil {
		t.Fatalf("PING on the same URL after Restart = %v", err)
	}
	// A kill loses nothing the server answered: its append-only file was written before it
	// replied (fsync, once a second, matters only when the machine goes down).
	if got, err := c.Get(ctx, "budget").Result(); got != "5" {
		t.Errorf("GET budget after a kill and restart = %q, %v; want \"5\" from the append-only file", got, err)
	}
	again := srv.PID()
	if err := srv.Restart(ctx); err != nil || srv.PID() != again {
		t.Errorf("Restart of a running server = %v, pid %d → %d; want nothing done", err, again, srv.PID())
	}

	// Close stops it even while paused.
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close of a paused server took %v, want it resumed to handle SIGINT at once", d)
	}
	if err := syscall.Kill(again, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("signal 0 to the closed server %d = %v, want no such process", again, err)
	}
}

func TestServerIsOnlyTheStartedOnes(t *testing.T) {
	rd := testkit.StartRedis(t)
	r, err := redisconn.Resolve(context.Background(), redisconn.Options{URL: rd.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Server != nil {
		t.Errorf("Resolved.Server for REDIS_URL = %v, want nil: the process is not this one's", r.Server)
	}
}

// Dial makes a client of the named Redis and nothing else: no PING, so a store that is down
// (or paused) is no error until a command is sent, and never a store of its own.
func TestDialMakesNoChoices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rd := testkit.StartRedis(t)
	r, err := redisconn.Dial(rd.URL())
	if err != nil {
		t.Fatalf("Dial(%s) = %v", rd.URL(), err)
	}
	defer r.Close()
	if r.Source != redisconn.SourceEnv || r.URL != rd.URL() || r.Server != nil {
		t.Errorf("Dial = source %s, url %s, server %v; want env, %s, none", r.Source, r.URL, r.Server, rd.URL())
	}
	assertServes(t, ctx, r.Client)

	rd.Stop()
	down, err := redisconn.Dial(rd.URL())
	if err != nil {
		t.Fatalf("Dial of a stopped server = %v, want a client (no PING)", err)
	}
	defer down.Close()
	if err := down.Client.Ping(ctx).Err(); err == nil {
		t.Error("PING through a client of a stopped server = nil, want an error")
	}
	if _, err := redisconn.Dial("http://127.0.0.1:1"); err == nil {
		t.Error("Dial(http://…) = nil error, want the URL refused")
	}
}

// TestEachStartBeginsEmpty: the append-only file carries a server across a kill within one
// run of the all-in-one mode, never into the next run.
func TestEachStartBeginsEmpty(t *testing.T) {
	bin := testkit.LookPath(t, "redis-server")
	ctx := context.Background()
	dir := t.TempDir()
	first, err := redisconn.Resolve(ctx, redisconn.Options{RedisServerPath: bin, DataDir: dir})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if err := first.Client.Set(ctx, "budget", "5", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := redisconn.Resolve(ctx, redisconn.Options{RedisServerPath: bin, DataDir: dir})
	if err != nil {
		t.Fatalf("Resolve again: %v", err)
	}
	defer second.Close()
	if err := second.Client.Get(ctx, "budget").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET budget in the next run = %v, want nil: each start begins empty", err)
	}
}
