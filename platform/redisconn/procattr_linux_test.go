package redisconn_test

import (
	"context"
	"syscall"
	"testing"

	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/testkit"
)

// The redis-server Resolve starts is in a process group of its own: a Ctrl-C at the terminal
// signals the whole foreground group, and a child in it would exit at once while the
// process's components still drain and call it. The process stops it with Close, last.
func TestStartedServerIgnoresTheTerminalsCtrlC(t *testing.T) {
	bin := testkit.LookPath(t, "redis-server")
	r, err := redisconn.Resolve(context.Background(), redisconn.Options{RedisServerPath: bin, DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	defer r.Close()
	pgid, err := syscall.Getpgid(r.Server.PID())
	if err != nil {
		t.Fatal(err)
	}
	if pgid == syscall.Getpgrp() {
		t.Errorf("redis-server is in this process's group %d, want a group of its own", pgid)
	}
}
