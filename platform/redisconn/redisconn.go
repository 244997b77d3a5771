// Package redisconn finds the Redis a BoxOffice process uses, in the all-in-one mode's
// order of preference:
//
//  1. REDIS_URL, when set: a single server (redis://, rediss://, unix://) or a Redis
//     Cluster written as redis+cluster://host1:port1,host2:port2 (see Resolve);
//  2. otherwise a redis-server binary found on this machine, started as a child process
//     on a free loopback port;
//  3. otherwise an in-process emulator (miniredis), with a loud warning.
//
// The order exists so that `make up` works on any machine, while every lesson about
// distributed limits is still taught against a real Redis wherever one can be had: the
// emulator runs Lua and answers TIME, but it is not the real engine.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Sources a Resolved can come from.
const (
	SourceEnv         = "env"
	SourceRedisServer = "redis-server"
	SourceEmulator    = "emulator"
)

// Options says where Redis may come from. The zero value resolves to a local redis-server
// if one is installed, else the emulator.
type Options struct {
	// URL is REDIS_URL; "" means not set.
	URL string
	// DataDir is where a started redis-server keeps its working directory (DataDir/redis);
	// "" means the current directory.
	DataDir string
	// RedisServerPath is the redis-server binary; "" means look "redis-server" up in PATH.
	RedisServerPath string
	// LookPath finds a binary by name; nil means exec.LookPath. Tests replace it to
	// pretend a binary is, or is not, installed.
	LookPath func(name string) (string, error)
	// StartTimeout bounds the wait for a started redis-server to answer PING; 0 means 5s.
	StartTimeout time.Duration
	// Log receives the choice made and the emulator warning; nil discards them.
	Log *slog.Logger
	// AllowDown makes a URL that does not answer its first PING a warning rather than an
	// error: Resolve returns the URL's client all the same, for a caller that handles a
	// Redis that is down (the gateway's limiter falls back, and its calls reach Redis once
	// it answers). It never falls back to a private Redis. False, the default, makes such
	// a URL an error.
	AllowDown bool
}

// Resolved is the Redis a process uses and what it took to get it.
type Resolved struct {
	// Client talks to the resolved Redis; a *redis.ClusterClient for a cluster URL.
	Client redis.UniversalClient
	// URL is where the Redis listens, for logs and for other processes.
	URL string
	// Source is SourceEnv, SourceRedisServer or SourceEmulator.
	Source string
	// Server is the redis-server Resolve started (SourceRedisServer), to fault it on purpose;
	// nil for any other source.
	Server *Server

	stop func() error
}

// Close closes the client and stops whatever Resolve started (a child redis-server, the
// emulator). It leaves a Redis named by URL running.
func (r *Resolved) Close() error {
	err := r.Client.Close()
	if r.stop != nil {
		err = errors.Join(err, r.stop())
	}
	return err
}

// Private returns a Redis of this process's own, whatever REDIS_URL says: a redis-server
// child when one is installed, else the emulator. For a store nobody else shares on
// purpose, such as the regions the playground builds; opts.URL is ignored.
func Private(ctx context.Context, opts Options) (*Resolved, error) {
	opts.URL = ""
	return Resolve(ctx, opts)
}

// Resolve returns the first Redis available in the package's order. A URL that is set but
// does not answer is an error (or, with AllowDown, a warning), never a reason to fall back:
// a process told to share a Redis with its replicas must not quietly enforce limits on a
// private one.
func Resolve(ctx context.Context, opts Options) (*Resolved, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.URL != "" {
		c, err := clientFromURL(opts.URL)
		if err != nil {
			return nil, err
		}
		r := &Resolved{Client: c, URL: opts.URL, Source: SourceEnv}
		if err := ping(ctx, c, opts.URL); err != nil {
			if !opts.AllowDown {
				_ = c.Close()
				return nil, err
			}
			log.Warn("redis from REDIS_URL not answering; starting without it", "url", redactedURL(opts.URL), "error", err)
			return r, nil
		}
		log.Info("redis from REDIS_URL", "url", redactedURL(opts.URL))
		return r, nil
	}

	bin := opts.RedisServerPath
	if bin == "" {
		lookPath := opts.LookPath
		if lookPath == nil {
			lookPath = exec.LookPath
		}
		bin, _ = lookPath("redis-server") // not found: fall through to the emulator
	}
	if bin != "" {
		r, err := startServer(ctx, bin, opts.DataDir, opts.StartTimeout)
		if err != nil {
			return nil, err
		}
		log.Info("redis-server started", "url", r.URL, "bin", bin)
		return r, nil
	}

	r, err := startEmulator(ctx)
	if err != nil {
		return nil, err
	}
	log.Warn("REDIS EMULATOR IN USE: no REDIS_URL and no redis-server installed. "+
		"Lua scripts and TIME are emulated in-process, so rate limits are not production-grade "+
		"and may differ from a real Redis. Set REDIS_URL or install redis-server.",
		"url", r.URL)
	return r, nil
}

func ping(ctx context.Context, c redis.UniversalClient, url string) error {
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping %s: %w", redactedURL(url), err)
	}
	return nil
}

// maintNotificationsOff turns go-redis's maintenance notifications off for every client this
// package makes. By default ("auto") each connection asks the server for the push messages a
// managed Redis sends before it moves a node, and on a refusal the client rewrites its own
// options; a copy of them made meanwhile (the gateway's limiter client) races with that, and
// shares a push processor whose handlers it then fails to register again. BoxOffice does not
// act on these messages.
func maintNotificationsOff() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}
