package redisconn_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/testkit"
)

// lookPath records the names it was asked for and answers from bin ("" = not installed).
type lookPath struct {
	bin   string
	asked []string
}

func (l *lookPath) find(name string) (string, error) {
	l.asked = append(l.asked, name)
	if l.bin == "" {
		return "", exec.ErrNotFound
	}
	return l.bin, nil
}

func TestResolveOrder(t *testing.T) {
	redisServer := testkit.LookPath(t, "redis-server")
	envRedis := testkit.StartRedis(t)

	tests := []struct {
		name       string
		url        string
		installed  string // what LookPath finds; "" = nothing
		wantSource string
		wantLooked bool
		wantWarn   bool
	}{
		{name: "env wins over a local binary", url: envRedis.URL(), installed: redisServer,
			wantSource: redisconn.SourceEnv, wantLooked: false},
		{name: "local binary wins over the emulator", installed: redisServer,
			wantSource: redisconn.SourceRedisServer, wantLooked: true},
		{name: "no binary falls back to the emulator with a warning",
			wantSource: redisconn.SourceEmulator, wantLooked: true, wantWarn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var logs bytes.Buffer
			lp := &lookPath{bin: tt.installed}
			r, err := redisconn.Resolve(ctx, redisconn.Options{
				URL: tt.url, DataDir: t.TempDir(), LookPath: lp.find,
				Log: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			defer r.Close()

			if r.Source != tt.wantSource {
				t.Errorf("Resolve().Source = %q, want %q", r.Source, tt.wantSource)
			}
			if looked := len(lp.asked) > 0; looked != tt.wantLooked {
				t.Errorf("looked for redis-server = %v (%v), want %v", looked, lp.asked, tt.wantLooked)
			}
			warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "EMULATOR")
			if warned != tt.wantWarn {
				t.Errorf("emulator warning logged = %v, want %v; log:\n%s", warned, tt.wantWarn, logs.String())
			}
			assertServes(t, ctx, r.Client)

			// The URL names the same server the client talks to.
			opts, err := redis.ParseURL(r.URL)
			if err != nil {
				t.Fatalf("ParseURL(%q): %v", r.URL, err)
			}
			other := redis.NewClient(opts)
			defer other.Close()
			if got, err := other.Get(ctx, "resolve-check").Result(); err != nil || got != "ok" {
				t.Errorf("GET through Resolved.URL %s = %q, %v; want \"ok\"", r.URL, got, err)
			}
		})
	}
}

func TestPrivateIgnoresTheURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shared := testkit.StartRedis(t)
	r, err := redisconn.Private(ctx, redisconn.Options{URL: shared.URL(), DataDir: t.TempDir(), LookPath: (&lookPath{}).find})
	if err != nil {
		t.Fatalf("Private: %v", err)
	}
	defer r.Close()
	if r.Source != redisconn.SourceEmulator || r.URL == shared.URL() {
		t.Errorf("Private = %s at %s, want a store of its own, not the URL's %s", r.Source, r.URL, shared.URL())
	}
	assertServes(t, ctx, r.Client)
}

func TestResolveEnvUsesTheNamedServer(t *testing.T) {
	envRedis := testkit.StartRedis(t)
	ctx := context.Background()
	r, err := redisconn.Resolve(ctx, redisconn.Options{URL: envRedis.URL()})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	defer r.Close()
	if err := r.Client.Set(ctx, "shared", "yes", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := envRedis.Client().Get(ctx, "shared").Result(); err != nil || got != "yes" {
		t.Errorf("GET shared on the REDIS_URL server = %q, %v; want \"yes\"", got, err)
	}
}

func TestResolveUnreachableURLIsAnError(t *testing.T) {
	url := fmt.Sprintf("redis://:secret@127.0.0.1:%d/0", testkit.FreePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lp := &lookPath{bin: "/usr/bin/redis-server"}
	r, err := redisconn.Resolve(ctx, redisconn.Options{URL: url, LookPath: lp.find})
	if err == nil {
		r.Close()
		t.Fatalf("Resolve(%s) with nothing listening = %s source, want an error", url, r.Source)
	}
	if len(lp.asked) > 0 {
		t.Errorf("Resolve fell back to a local binary after REDIS_URL failed, want an error only")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("Resolve error %q shows the password", err)
	}
}

func TestResolveClusterURL(t *testing.T) {
	rc := testkit.StartRedisCluster(t)
	url := redisconn.ClusterScheme + "://" + strings.Join(rc.Addrs(), ",") + "?dial_timeout=1s"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := redisconn.Resolve(ctx, redisconn.Options{URL: url})
	if err != nil {
		t.Fatalf("Resolve(%s): %v", url, err)
	}
	defer r.Close()
	if _, ok := r.Client.(*redis.ClusterClient); !ok {
		t.Fatalf("Resolve(%s).Client is %T, want *redis.ClusterClient", url, r.Client)
	}
	// Keys on every master: only a cluster client follows MOVED redirections.
	for i := range 20 {
		if err := r.Client.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d through the cluster client: %v", i, err)
		}
	}
}

func TestCloseStopsTheStartedServer(t *testing.T) {
	bin := testkit.LookPath(t, "redis-server")
	ctx := context.Background()
	r, err := redisconn.Resolve(ctx, redisconn.Options{RedisServerPath: bin, DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	opts, _ := redis.ParseURL(r.URL)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Errorf("PING %s after Close succeeded, want the child redis-server gone", r.URL)
	}
}

func TestResolveBadBinary(t *testing.T) {
	ctx := context.Background()
	_, err := redisconn.Resolve(ctx, redisconn.Options{RedisServerPath: "/nonexistent/redis-server", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "start /nonexistent/redis-server") {
		t.Errorf("Resolve(missing binary) error = %v, want a start error naming the binary", err)
	}
}

// assertServes writes and reads back a key through c.
func assertServes(t *testing.T, ctx context.Context, c redis.UniversalClient) {
	t.Helper()
	if err := c.Set(ctx, "resolve-check", "ok", time.Minute).Err(); err != nil {
		t.Fatalf("SET through the resolved client: %v", err)
	}
	if got, err := c.Get(ctx, "resolve-check").Result(); err != nil || got != "ok" {
		t.Fatalf("GET through the resolved client = %q, %v; want \"ok\"", got, err)
	}
}

// A redis-server that exits at once (here: an unknown option) must fail Resolve promptly,
// not leave it waiting on a process that is gone.
func TestResolveFailsFastWhenServerExits(t *testing.T) {
	bin := testkit.LookPath(t, "redis-server")
	fake := filepath.Join(t.TempDir(), "redis-server")
	script := "#!/bin/sh\nexec " + bin + " --no-such-option\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := redisconn.Resolve(context.Background(), redisconn.Options{DataDir: t.TempDir(), RedisServerPath: fake, StartTimeout: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited before answering PING") {
		t.Fatalf("Resolve with a crashing redis-server = %v, want an exit error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Resolve took %v to notice the exit, want well under the 3s start timeout", d)
	}
}
