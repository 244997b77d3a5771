package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
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

// proc is a child process of the bench: a target or the upstream.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *tail
	done chan struct{}
	err  error // how it exited, once done is closed
}

// startProc starts a child of the bench, pinned to the bench's target CPUs when it has any:
// through taskset, which execs the child, so that the child's pid is the one started.
func (b *bench) startProc(name, bin string, args, env []string) (*proc, error) {
	if b.cpus == "" {
		return startProc(name, bin, args, env)
	}
	return startProc(name, "taskset", append([]string{"-c", b.cpus, bin}, args...), env)
}

// pinRedis moves the redis-server the bench started to its target CPUs: as a child of the
// bench it would otherwise share the load generator's.
func (b *bench) pinRedis(ctx context.Context) error {
	if b.cpus == "" {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "taskset", "-a", "-p", "-c", b.cpus, strconv.Itoa(b.redisPID)).CombinedOutput(); err != nil {
		return fmt.Errorf("pin redis-server: %w: %s", err, out)
	}
	return nil
}

// redisPID asks a Redis server for its process id.
func redisPID(ctx context.Context, c redis.UniversalClient) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, fmt.Errorf("redis info: %w", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("redis info names no process_id")
}

// cpuTime is the CPU time (user and system) the processes pids and their children (nginx's
// workers) have used so far, as /proc counts it: in ticks of 1/100 s, so a run must last
// long enough for the difference to mean something (5000 requests at 50µs are 25 ticks).
// A process that cannot be read counts nothing.
func cpuTime(pids []int) time.Duration {
	const tick = 10 * time.Millisecond // USER_HZ, 100 on every Linux the bench runs on
	var total time.Duration
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command name (which may hold spaces) are space-separated;
		// utime and stime are the 14th and 15th of the line, the 12th and 13th after it.
		_, rest, _ := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+s) * tick
		total += cpuTime(children(pid))
	}
	return total
}

// children lists the live child processes of pid.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// cpuCount counts the CPUs of a taskset list such as "1", "2-3" or "0,2".
func cpuCount(list string) (int, error) {
	n := 0
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return 0, fmt.Errorf("%q is not a CPU list such as 1, 2-3 or 0,2", list)
		}
		n += b - a + 1
	}
	return n, nil
}

// startProc starts bin with args and env (added to nothing: the child sees only env).
func startProc(name, bin string, args, env []string) (*proc, error) {
	p := &proc{name: name, out: &tail{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// stop asks the process to end (SIGTERM, as a deployment would), and kills it after 5s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady polls url until it answers 200, the process exits or within passes.
func (p *proc) waitReady(ctx context.Context, url string, header http.Header, within time.Duration) error {
	deadline := time.Now().Add(within)
	last := "no answer"
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before it was ready:\n%s", p.name, p.err, p.out)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header = header.Clone()
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			last = res.Status
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	return fmt.Errorf("%s not ready within %v: GET %s: %s\n%s", p.name, within, url, last, p.out)
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tail keeps the last 8 KiB a process wrote, to show why it failed.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 8 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
