package server

import (
	"context"
	"errors"
	"flag"
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
//
// A process whose only argument is -h or --help is asked for its settings: Main and MainWith
// print them and return without starting anything. A run that returns flag.ErrHelp has
// printed its usage, as asked, and exits 0 too.
func Exec(run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if asksHelp(os.Args[1:]) {
		ctx = withHelp(ctx)
	}
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
