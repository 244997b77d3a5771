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
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// startServer runs bin as a child redis-server on a free loopback port, with its working
// directory and log under dataDir/redis, and returns once it answers PING.
//
// Each start of the all-in-one mode begins empty: what a previous run left is removed
// first. Within a run the server keeps an append-only file, fsynced every second, as compose
// and Kubernetes do, so that a crash or a kill and Restart (a fault drill) forgets at most a
// second of spending and never grants a quota again.
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
	if err := os.RemoveAll(filepath.Join(dir, "appendonlydir")); err != nil {
		return nil, fmt.Errorf("redis-server: a previous run's data: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("redis-server port: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logFile := filepath.Join(dir, "redis.log")
	srv := &Server{bin: bin, addr: addr, logFile: logFile, within: within, args: []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
		"--dir", dir, "--logfile", logFile}}
	if err := srv.Restart(ctx); err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaintNotificationsConfig: maintNotificationsOff()})
	return &Resolved{Client: c, URL: "redis://" + addr + "/0", Source: SourceRedisServer, Server: srv, stop: srv.stop}, nil
}

// Server is the redis-server Resolve started, as a process: what a fault drill needs to
// stall it, kill it and bring it back where its clients find it (the playground's
// store-outage scenario). Its methods are safe for concurrent use; Resolved.Close stops it
// for good.
type Server struct {
	bin, addr, logFile string
	args               []string
	within             time.Duration

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil before the first start
	exited chan struct{} // closed (never sent on) once cmd has exited, so that all can see it
	paused bool          // stopped by SIGSTOP
}

// PID is the running process's id; 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return 0
	}
	return s.cmd.Process.Pid
}

// Pause stops the process with SIGSTOP: the kernel still accepts connections on its port,
// and nothing is answered until Continue, as with a host that froze. An error when it is not
// running. Close resumes it to stop it; but should this process die without Close, the
// death signal (childProcAttr) waits, like any signal but SIGKILL, until the child runs
// again: a paused child outlives a crash, stopped.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return errors.New("redis-server is not running")
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause redis-server: %w", err)
	}
	s.paused = true
	return nil
}

// Continue lets a paused process run again with SIGCONT; nothing when it is not paused.
func (s *Server) Continue() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.continueLocked()
}

func (s *Server) continueLocked() error {
	if !s.paused || !s.runningLocked() {
		s.paused = false
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume redis-server: %w", err)
	}
	s.paused = false
	return nil
}

// Kill kills the process with SIGKILL, as a crash would, and returns once it has exited:
// its port refuses connections, and what it held in memory is gone. Nothing when it is not
// running.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return nil
	}
	_ = s.cmd.Process.Kill() // a paused process dies of SIGKILL too
	<-s.exited
	s.paused = false
	return nil
}

// Restart starts the process again, on the same port and directory, and returns once it
// answers PING; nothing when it is running. It starts empty: persistence is off.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runningLocked() {
		return nil
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	s.cmd, s.exited, s.paused = cmd, exited, false
	if err := waitReady(ctx, s.addr, exited, func() error { return waitErr }, s.within); err != nil {
		s.stopLocked()
		return fmt.Errorf("redis-server on %s: %w%s", s.addr, err, logTail(s.logFile))
	}
	return nil
}

// stop ends the process for good: SIGINT (redis-server exits without saving), SIGKILL if it
// has not exited within 5s.
func (s *Server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	return nil
}

func (s *Server) stopLocked() {
	if !s.runningLocked() {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.continueLocked() // a paused process handles its SIGINT once it runs
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *Server) runningLocked() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
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
