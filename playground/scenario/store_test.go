package scenario

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/testkit"
)

// fakeProcess records what is done to it, as redisconn.Server would be done to.
type fakeProcess struct {
	mu      sync.Mutex
	calls   []string
	killErr error
}

var _ StoreProcess = (*fakeProcess)(nil)

func (f *fakeProcess) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeProcess) Pause() error                  { f.record("pause"); return nil }
func (f *fakeProcess) Continue() error               { f.record("continue"); return nil }
func (f *fakeProcess) Kill() error                   { f.record("kill"); return f.killErr }
func (f *fakeProcess) Restart(context.Context) error { f.record("restart"); return nil }
func (f *fakeProcess) PID() int                      { return 4242 }

// take returns the calls so far and forgets them.
func (f *fakeProcess) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

// serveFake starts an embedded NATS server, serves p's faults on it as `boxoffice up` does,
// and returns a system that reaches it.
func serveFake(t *testing.T, p StoreProcess) *system {
	t.Helper()
	srv := testkit.StartNATS(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	stop, err := ServeStoreFaults(nc, p, "boxoffice up", nil)
	if err != nil {
		t.Fatalf("ServeStoreFaults = %v", err)
	}
	t.Cleanup(stop)
	s, err := newSystem(Target{NATS: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// The process that owns the store puts it in each state from any other: a stall or up
// brings a killed process back first (Restart does nothing to a running one).
func TestStoreFaultsReachTheOwningProcess(t *testing.T) {
	p := &fakeProcess{}
	s := serveFake(t, p)
	ctx := context.Background()

	how, err := s.storeOwner(ctx)
	if err != nil || !strings.Contains(how, "pid 4242, started by boxoffice up") || !strings.Contains(how, "SIGKILL") {
		t.Errorf("storeOwner = %q, %v; want the owner, the pid and the signals", how, err)
	}
	if calls := p.take(); len(calls) != 0 {
		t.Errorf("asking who owns the store did %v to it, want nothing", calls)
	}
	tests := []struct {
		state string
		calls []string
		how   string
	}{
		{StoreStalled, []string{"restart", "pause"}, "SIGSTOP"},
		{StoreKilled, []string{"kill"}, "SIGKILL"},
		{StoreUp, []string{"restart", "continue"}, "answering again"},
	}
	for _, tt := range tests {
		how, err := s.setStore(ctx, tt.state)
		if err != nil || !strings.Contains(how, tt.how) {
			t.Errorf("setStore(%s) = %q, %v; want it done, saying %q", tt.state, how, err, tt.how)
		}
		if calls := p.take(); !slices.Equal(calls, tt.calls) {
			t.Errorf("setStore(%s) did %v to the process, want %v", tt.state, calls, tt.calls)
		}
	}

	if _, err := s.setStore(ctx, "frozen"); err == nil || !strings.Contains(err.Error(), `store state "frozen"`) {
		t.Errorf("setStore(frozen) = %v, want the owner's refusal", err)
	}
	p.killErr = errors.New("operation not permitted")
	if _, err := s.setStore(ctx, StoreKilled); err == nil || !strings.Contains(err.Error(), "operation not permitted") {
		t.Errorf("setStore(killed) with a failing kill = %v, want the owner's error", err)
	}
}

// Without a process that owns it (REDIS_URL, compose), the store is stalled with CLIENT PAUSE
// WRITE and let go with CLIENT UNPAUSE; it cannot be killed.
func TestStoreNotOwnedIsPausedNotKilled(t *testing.T) {
	rd := testkit.StartRedis(t)
	nobody := testkit.StartNATS(t) // NATS, but no process answers for the store
	s, err := newSystem(Target{NATS: nobody.ClientURL(), Redis: rd.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx := context.Background()
	c := rd.Client()

	if how, err := s.storeOwner(ctx); err != nil || !strings.Contains(how, "not this system's process") {
		t.Errorf("storeOwner = %q, %v; want it to say the store is not this system's", how, err)
	}
	how, err := s.setStore(ctx, StoreStalled)
	if err != nil || !strings.Contains(how, "CLIENT PAUSE WRITE") {
		t.Fatalf("setStore(stalled) = %q, %v; want a CLIENT PAUSE", how, err)
	}
	// A write waits for the pause to be lifted; a read does not.
	written := make(chan error, 1)
	go func() { written <- c.Set(ctx, "k", "v", 0).Err() }()
	if err := c.Get(ctx, "other").Err(); err != nil && err.Error() != "redis: nil" {
		t.Errorf("GET while the store is stalled = %v, want an answer: only writes wait", err)
	}
	select {
	case err := <-written:
		t.Fatalf("SET while the store is stalled = %v, want it held until the pause is lifted", err)
	case <-time.After(300 * time.Millisecond):
	}
	if how, err := s.setStore(ctx, StoreUp); err != nil || !strings.Contains(how, "UNPAUSE") {
		t.Fatalf("setStore(up) = %q, %v; want a CLIENT UNPAUSE", how, err)
	}
	select {
	case err := <-written:
		if err != nil {
			t.Errorf("SET held by the pause = %v once it is lifted, want it done", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("SET still held 2s after the pause was lifted")
	}
	if _, err := s.setStore(ctx, StoreKilled); err == nil || !strings.Contains(err.Error(), "can stall it but not kill it") {
		t.Errorf("setStore(killed) on a store nobody owns = %v, want a refusal that says why", err)
	}

	noURL, err := newSystem(Target{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noURL.setStore(ctx, StoreStalled); err == nil || !strings.Contains(err.Error(), "names no Redis URL") {
		t.Errorf("setStore(stalled) without NATS or a Redis URL = %v, want a refusal naming what is missing", err)
	}
}

const storeScenario = catalogScenario + `name: outage
title: Outage
knobs:
  - {name: store, kind: enum, options: [up, stalled, killed], default: up}
profiles:
  - name: p
    phases:
      - {name: calm, duration: 1s, rate: 10}
      - {name: stalled, duration: 1s, rate: 10, knobs: {store: stalled}}
      - {name: killed, duration: 1s, rate: 10, knobs: {store: killed}}
    expect:
      - {name: the store decided, left: {metric: "decisions:store"}, op: ">", value: 0}
      - {name: nothing without it, left: {metric: without_store_ratio}, op: "==", value: 0}
`

// The store knob faults the store through the process that owns it, says so on the
// timeline, and the run brings the store back up as it ends, journaled until it has.
func TestStoreKnobFaultsTheStoreAndPutsItBack(t *testing.T) {
	p := &fakeProcess{}
	srv := testkit.StartNATS(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	stop, err := ServeStoreFaults(nc, p, "boxoffice up", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "journal.json")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	res := runOn(t, storeScenario, newFakeSystem(), Target{NATS: srv.ClientURL()}, Options{Journal: j})
	if got, want := p.take(), []string{"restart", "pause", "kill", "restart", "continue"}; !slices.Equal(got, want) {
		t.Errorf("the store process was put through %v, want %v: stalled, killed, then back up", got, want)
	}
	var said []string
	for _, e := range res.Events {
		if e.Kind == "store" {
			said = append(said, e.What)
		}
	}
	if len(said) != 3 || !strings.Contains(said[0], "pid 4242, started by boxoffice up") || !strings.Contains(said[1], "SIGSTOP") || !strings.Contains(said[2], "SIGKILL") {
		t.Errorf("store events = %q, want who owns it, the stall and the kill", said)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal after the run: %v, want none: the store is back up", err)
	}
}

// A run that dies with the store stalled leaves it in its journal, and the next process
// brings the store back up.
func TestADeadRunsStoreIsBroughtBackUp(t *testing.T) {
	p := &fakeProcess{}
	s := serveFake(t, p)
	path := filepath.Join(t.TempDir(), "journal.json")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.add(entry{Kind: entryStore, ID: storeID}); err != nil {
		t.Fatal(err)
	}
	j, err = OpenJournal(path)
	if err != nil || j.Pending() != 1 {
		t.Fatalf("OpenJournal of a journal holding the store = %v, %d pending; want it read, 1 pending", err, j.Pending())
	}
	if err := PutBack(context.Background(), s.t, j, nil); err != nil {
		t.Fatalf("PutBack = %v", err)
	}
	if got, want := p.take(), []string{"restart", "continue"}; !slices.Equal(got, want) || j.Pending() != 0 {
		t.Errorf("PutBack did %v to the store, %d left; want %v and nothing left", got, j.Pending(), want)
	}
}
