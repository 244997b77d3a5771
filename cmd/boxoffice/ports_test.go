package main

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// A planned port in use fails `up` at once, before anything starts, with an error that names
// the port and what was to listen there, and an offset whose ports are free.
func TestUpRefusesATakenPort(t *testing.T) {
	off := freeOffset(t)
	plan := planPorts(off)
	taken := plan[len(plan)/2]
	l, err := net.Listen("tcp", addr(taken.port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	dataDir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var out testkit.Buffer
	go func() {
		done <- run(ctx, []string{"boxoffice", "up", "--data-dir", dataDir, "--port-offset", strconv.Itoa(off)},
			func(string) string { return "" }, &out, &out)
	}()
	var upErr error
	select {
	case upErr = <-done:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
		t.Fatalf("up with port %d taken did not fail within 5s\n%s", taken.port, out.String())
	}
	want := "port " + strconv.Itoa(taken.port) + " (" + taken.what + ") is in use"
	if upErr == nil || !strings.Contains(upErr.Error(), want) {
		t.Fatalf("up with port %d taken = %v, want an error holding %q", taken.port, upErr, want)
	}
	m := regexp.MustCompile(`--port-offset (\d+)`).FindStringSubmatch(upErr.Error())
	if m == nil {
		t.Fatalf("up error %q suggests no --port-offset", upErr)
	}
	free, _ := strconv.Atoi(m[1])
	if free == off || !portsFree(free) {
		t.Errorf("up suggests --port-offset %d, want another offset whose ports are all free", free)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("up made its data dir before failing (stat: %v), want nothing started", err)
	}
}

func TestUpRefusesAnOffsetOutOfRange(t *testing.T) {
	for _, off := range []int{-4000, 60000} {
		err := run(context.Background(), []string{"boxoffice", "up", "--data-dir", t.TempDir(), "--port-offset", strconv.Itoa(off)},
			func(string) string { return "" }, &testkit.Buffer{}, &testkit.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "want 1024 to 65535") {
			t.Errorf("up --port-offset %d = %v, want an error naming the port range", off, err)
		}
	}
}

// Copies of `up` at 0 and at the offsets `up -h` names share no port, and stay below the
// kernel's ephemeral range; an offset of 1000 does share one, as `up -h` says.
func TestSafeOffsetsSeparateCopies(t *testing.T) {
	safe := safeOffsets()
	if len(safe) < 2 {
		t.Fatalf("safeOffsets() = %v, want room for at least two more copies", safe)
	}
	first, _ := ephemeralPorts()
	offs := append([]int{0}, safe...)
	for i, a := range offs {
		for _, p := range planPorts(a) {
			if p.port >= first {
				t.Errorf("offset %d puts the %s on %d, inside the ephemeral range from %d", a, p.what, p.port, first)
			}
		}
		for _, b := range offs[i+1:] {
			if shared := sharedPorts(a, b); len(shared) > 0 {
				t.Errorf("copies at offsets %d and %d share ports %v", a, b, shared)
			}
		}
	}
	if shared := sharedPorts(0, 1000); !slices.Contains(shared, 9101) {
		t.Errorf("copies at 0 and 1000 share %v, want 9101 among them (up -h's example)", shared)
	}
}

// up -h states the plan in numbers: they must be the plan's.
func TestUpUsageStatesThePortPlan(t *testing.T) {
	at := map[string]int{}
	lowest, highest := 65535, 0
	for _, p := range planPorts(0) {
		at[p.what] = p.port
		lowest, highest = min(lowest, p.port), max(highest, p.port)
		switch {
		case strings.HasSuffix(p.what, " gRPC") && (p.port < 9100 || p.port > 9299),
			strings.HasSuffix(p.what, " HTTP") && p.port != 8080 && p.port != 8090 && (p.port < 8100 || p.port > 8299):
			t.Errorf("the %s listens on %d, outside the ranges up -h names", p.what, p.port)
		}
	}
	text := upUsage()
	for what, port := range map[string]int{"gateway HTTP": 8080, "playground HTTP": 8090, "gateway admin API": 9080,
		"NATS": 4222, "auth HTTP": 8101, "auth gRPC": 9101} {
		if at[what] != port {
			t.Errorf("the %s listens on %d; up -h says %d", what, at[what], port)
		}
	}
	if span := "span " + strconv.Itoa(lowest) + " to " + strconv.Itoa(highest); !strings.Contains(text, span) {
		t.Errorf("up -h does not say the ports %s:\n%s", span, text)
	}
	if highest-lowest >= offsetStep {
		t.Errorf("one copy's ports span %d to %d, not less than the offset step %d", lowest, highest, offsetStep)
	}
}

// sharedPorts lists the ports copies at offsets a and b would both listen on.
func sharedPorts(a, b int) []int {
	var shared []int
	for _, p := range planPorts(a) {
		if slices.ContainsFunc(planPorts(b), func(q plannedPort) bool { return q.port == p.port }) {
			shared = append(shared, p.port)
		}
	}
	return shared
}
