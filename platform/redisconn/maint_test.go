package redisconn_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/testkit"
)

// redisLog records what go-redis logs through its package-wide logger.
type redisLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *redisLog) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

func (l *redisLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = nil
}

// stderrLog is go-redis's default logger again, once a test has recorded what it logs.
type stderrLog struct{ *log.Logger }

func (l stderrLog) Printf(_ context.Context, format string, v ...any) { l.Logger.Printf(format, v...) }

func (l *redisLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestResolvedClientsHaveMaintNotificationsOff: every client Resolve makes has go-redis's
// maintenance notifications off, so a client made from a copy of its options, as the
// gateway makes its limiter's, starts without the library logging that it could not register
// its notification handlers a second time on the push processor the copy shares.
func TestResolvedClientsHaveMaintNotificationsOff(t *testing.T) {
	redisServer := testkit.LookPath(t, "redis-server")
	envRedis := testkit.StartRedis(t)
	cluster := testkit.StartRedisCluster(t)
	logs := &redisLog{}
	redis.SetLogger(logs)
	t.Cleanup(func() { redis.SetLogger(stderrLog{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}) })

	tests := []struct {
		name string
		opts redisconn.Options
	}{
		{"REDIS_URL", redisconn.Options{URL: envRedis.URL()}},
		{"cluster URL", redisconn.Options{URL: redisconn.ClusterScheme + "://" + strings.Join(cluster.Addrs(), ",")}},
		{"redis-server", redisconn.Options{RedisServerPath: redisServer}},
		{"emulator", redisconn.Options{LookPath: (&lookPath{}).find}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tt.opts.DataDir = t.TempDir()
			logs.reset()
			r, err := redisconn.Resolve(ctx, tt.opts)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			defer r.Close()

			var mode maintnotifications.Mode
			var copied redis.UniversalClient
			switch c := r.Client.(type) {
			case *redis.Client:
				o := *c.Options()
				mode, o.ContextTimeoutEnabled = modeOf(o.MaintNotificationsConfig), true
				copied = redis.NewClient(&o)
			case *redis.ClusterClient:
				o := *c.Options()
				mode, o.ContextTimeoutEnabled = modeOf(o.MaintNotificationsConfig), true
				copied = redis.NewClusterClient(&o)
			default:
				t.Fatalf("Resolve().Client is %T, want a *redis.Client or *redis.ClusterClient", r.Client)
			}
			defer copied.Close()
			if mode != maintnotifications.ModeDisabled {
				t.Errorf("Resolve().Client's maintenance notifications = %q, want %q", mode, maintnotifications.ModeDisabled)
			}
			assertServes(t, ctx, r.Client)
			assertServes(t, ctx, copied)
			if got := logs.String(); got != "" {
				t.Errorf("go-redis logged, want nothing:\n%s", got)
			}
		})
	}
}

// modeOf is the mode of a maintenance-notifications config; nil means go-redis's default.
func modeOf(c *maintnotifications.Config) maintnotifications.Mode {
	if c == nil {
		return maintnotifications.DefaultConfig().Mode
	}
	return c.Mode
}
