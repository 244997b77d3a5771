package redisconn

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
	"time"

	"github.com/redis/go-redis/v9"
)

// startServer runs bin as a child redis-server on a free loopback port, with its working
// directory and log under dataDir/redis, and returns once it answers PING.
//
// Persistence is off: the server holds rate-limit counters, leases and queues whose life is
// seconds to minutes, and a fresh start of the all-in-one mode is expected to begin empty.
func startServer(ctx context.Context, bin, dataDir string, within time.Duration) (*Resolved, error) {
	if within == 0 {
		within = 5 * time.Second
	}
	// Absolute, because redis-server changes into --dir before it opens --logfile.
	dir, err := filepath.Abs(filepath.Join(dataDir, "redis"))
	if err != nil {
		return nil, fmt.Errorf("redis-server dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redis-server dir: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("redis-server port: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logFile := filepath.Join(dir, "redis.log")
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", logFile)
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	// exited is closed (never sent on) so that both waitReady and stop can see the exit.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() error {
		select {
		case <-exited: // already gone
			return nil
		default:
		}
		_ = cmd.Process.Signal(os.Interrupt) // SIGINT: redis-server exits without saving
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		return nil
	}

	if err := waitReady(ctx, addr, exited, func() error { return waitErr }, within); err != nil {
		_ = stop()
		return nil, fmt.Errorf("redis-server on %s: %w%s", addr, err, logTail(logFile))
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaintNotificationsConfig: maintNotificationsOff()})
	return &Resolved{Client: c, URL: "redis://" + addr + "/0", Source: SourceRedisServer, stop: stop}, nil
}

// waitReady polls PING until it answers, the process exits, within passes or ctx ends. Its
// probe client neither retries nor waits long for a dial, so an exit is noticed at once.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}, exitErr func() error, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond, PoolSize: 1,
		MaintNotificationsConfig: maintNotificationsOff()})
	defer c.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		pingCtx, cancelPing := context.WithTimeout(ctx, 200*time.Millisecond)
		err := c.Ping(pingCtx).Err()
		cancelPing()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before answering PING: %w", errors.Join(exitErr(), err))
		case <-ctx.Done():
			return fmt.Errorf("no PING answer: %w", errors.Join(ctx.Err(), err))
		case <-tick.C:
		}
	}
}

// freePort asks the kernel for a free loopback port. Another process could take it before
// redis-server binds it; the PING wait then fails with the server's own log in the error.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last lines of the server log, to explain a failed start.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "\n" + strings.Join(lines, "\n")
}
