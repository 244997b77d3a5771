package redisconn

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// startEmulator runs miniredis in-process: enough Redis (strings, hashes, sorted sets, Lua,
// TIME) for every feature to work on a machine with nothing installed, but an in-memory map
// behind one lock with a Lua interpreter written in Go, not the engine whose atomicity,
// clock and speed the lessons describe.
func startEmulator(ctx context.Context) (*Resolved, error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return nil, fmt.Errorf("start redis emulator: %w", err)
	}
	url := "redis://" + mr.Addr() + "/0"
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaintNotificationsConfig: maintNotificationsOff()})
	if err := ping(ctx, c, url); err != nil {
		_ = c.Close()
		mr.Close()
		return nil, err
	}
	return &Resolved{Client: c, URL: url, Source: SourceEmulator, stop: func() error {
		mr.Close()
		return nil
	}}, nil
}
