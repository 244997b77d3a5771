package redisconn_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/testkit"
)

// TestResolveAllowDown names a Redis that is down: with AllowDown, Resolve returns that
// URL's client with a warning, never a private Redis, and the client reaches the server once
// it is up.
func TestResolveAllowDown(t *testing.T) {
	rd := testkit.StartRedis(t)
	rd.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var logs bytes.Buffer
	lp := &lookPath{bin: "/usr/bin/redis-server"}
	r, err := redisconn.Resolve(ctx, redisconn.Options{URL: rd.URL(), LookPath: lp.find, AllowDown: true,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("Resolve(%s, AllowDown) with the server down = %v, want its client", rd.URL(), err)
	}
	defer r.Close()
	if r.Source != redisconn.SourceEnv || r.URL != rd.URL() || len(lp.asked) > 0 {
		t.Errorf("Resolve(AllowDown) = source %s, url %s, asked for %v; want env, %s, no binary", r.Source, r.URL, lp.asked, rd.URL())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "not answering") {
		t.Errorf("Resolve(AllowDown) logged %q, want a warning that REDIS_URL is not answering", logs.String())
	}
	if err := r.Client.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING with the server down = nil, want an error")
	}

	rd.Start()
	testkit.Eventually(t, 5*time.Second, "the client reaches the server once it is up", func() bool {
		return r.Client.Set(ctx, "shared", "yes", 0).Err() == nil
	})
	if got, err := rd.Client().Get(ctx, "shared").Result(); err != nil || got != "yes" {
		t.Errorf("GET shared on the REDIS_URL server = %q, %v; want \"yes\"", got, err)
	}
}
