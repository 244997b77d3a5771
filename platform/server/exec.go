package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// RunFunc is the entry point every deployable exports: it gets the process's inputs instead of
// reading globals, so tests and `boxoffice up` can run it in-process with their own.
type RunFunc func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// Exec runs run with the operating system's inputs, cancels its context on SIGINT or SIGTERM,
// and exits 1 with the error on stderr when it fails. It is the whole body of every main.
func Exec(run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
