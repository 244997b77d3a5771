package scenario

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// die ends r as a process that dies mid-run does: what it held in memory to put back is
// lost, so nothing is put back; its journal, on disk, is not.
func die(r *Run) {
	r.mu.Lock()
	r.restores = nil
	r.mu.Unlock()
	r.Stop()
	<-r.Done()
}

// startJournaled starts the fake scenario against h with a journal at path.
func startJournaled(t *testing.T, h http.Handler, path string) (*Run, Target) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	sc, err := Parse([]byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatalf("OpenJournal(%s) = %v", path, err)
	}
	target := Target{Gateway: srv.URL, Admin: srv.URL, AdminToken: "t", Services: map[string][]string{"catalog": {srv.URL}}}
	run, err := Start(context.Background(), sc, "", target, Options{Journal: j})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	t.Cleanup(func() { run.Stop(); <-run.Done() })
	return run, target
}

// A run that dies after changing the gateway (its limit and route) and the backend's knobs
// leaves them in force; the journal it leaves lets the next process put all of them back.
func TestADeadRunIsPutBackFromItsJournal(t *testing.T) {
	sys := newFakeSystem("api-per-ip")
	path := filepath.Join(t.TempDir(), "journal.json")
	run, target := startJournaled(t, sys, path)
	die(run)

	sys.mu.Lock()
	left := len(sys.edits)
	sys.mu.Unlock()
	if left != 2 {
		t.Fatalf("edits after the run died = %d, want the run's 2 still in force (limit and route)", left)
	}
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatalf("OpenJournal after the death = %v", err)
	}
	if got := j.Pending(); got != 3 {
		t.Fatalf("Pending() of the dead run's journal = %d, want 3: the route, the limit, the backend", got)
	}
	if err := PutBack(context.Background(), target, j, nil); err != nil {
		t.Fatalf("PutBack = %v, want nil", err)
	}

	sys.mu.Lock()
	defer sys.mu.Unlock()
	if len(sys.edits) != 0 || !slices.Equal(sys.routeLimits, []string{"api-per-ip"}) {
		t.Errorf("after PutBack: edits %v, route limits %v; want no edit and the route as found", sys.edits, sys.routeLimits)
	}
	slices.Sort(sys.dropped)
	if want := []string{"limit/lim", "route/events"}; !slices.Equal(sys.dropped, want) {
		t.Errorf("edits dropped = %v, want %v", sys.dropped, want)
	}
	if n := len(sys.control); n < 2 || !strings.Contains(sys.control[n-1], `"max_concurrent":0`) {
		t.Errorf("control PUTs = %v, want the knobs as found (max_concurrent 0) last", sys.control)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat journal after everything is put back = %v, want it removed", err)
	}
}

// A run that ends puts back its changes and removes its journal; a change whose put-back
// fails stays in the journal, and a later PutBack puts it back.
func TestTheJournalKeepsOnlyWhatWasNotPutBack(t *testing.T) {
	tests := []struct {
		name     string
		failDrop string // an edit whose DELETE /admin/edits answers 500 during the run
		want     int    // entries left after the run
	}{
		{name: "every change put back", want: 0},
		{name: "the route's put-back fails", failDrop: "/admin/edits/route/events", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newFakeSystem("api-per-ip")
			var failing atomic.Bool
			failing.Store(tt.failDrop != "")
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if failing.Load() && r.Method == http.MethodDelete && r.URL.Path == tt.failDrop {
					http.Error(w, "the store is down", http.StatusInternalServerError)
					return
				}
				sys.ServeHTTP(w, r)
			})
			path := filepath.Join(t.TempDir(), "journal.json")
			run, target := startJournaled(t, h, path)
			run.Stop()
			<-run.Done()

			j, err := OpenJournal(path)
			if err != nil {
				t.Fatalf("OpenJournal after the run = %v", err)
			}
			if got := j.Pending(); got != tt.want {
				t.Fatalf("Pending() after the run = %d, want %d", got, tt.want)
			}
			if _, err := os.Stat(path); (err == nil) != (tt.want > 0) {
				t.Errorf("stat journal after the run = %v, want it present only with changes left", err)
			}
			if tt.want == 0 {
				return
			}
			if e := j.pending()[0]; e.what() != "route events" {
				t.Errorf("the entry left = %s, want route events", e.what())
			}
			failing.Store(false)
			if err := PutBack(context.Background(), target, j, nil); err != nil {
				t.Fatalf("PutBack once the store is back = %v, want nil", err)
			}
			sys.mu.Lock()
			defer sys.mu.Unlock()
			if len(sys.edits) != 0 || j.Pending() != 0 {
				t.Errorf("after PutBack: edits %v, %d pending; want none", sys.edits, j.Pending())
			}
		})
	}
}

// A change journaled but never made (the process died between the two) is put back
// harmlessly: dropping an edit that is not there is done, not an error.
func TestPutBackOfAChangeNeverMade(t *testing.T) {
	var deletes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && r.URL.Path == "/admin/edits/limit/lim" {
			deletes.Add(1)
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	j, err := OpenJournal(filepath.Join(t.TempDir(), "journal.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.add(entry{Kind: entryEdit, Element: "limit", ID: "lim"}); err != nil {
		t.Fatal(err)
	}
	if err := PutBack(context.Background(), Target{Admin: srv.URL}, j, nil); err != nil {
		t.Errorf("PutBack of an edit the gateway does not have = %v, want nil", err)
	}
	if deletes.Load() != 1 || j.Pending() != 0 {
		t.Errorf("DELETEs %d, pending %d; want 1 and 0", deletes.Load(), j.Pending())
	}
}

// A journal that cannot be read is set aside, not dropped, and reported; the journal opened
// instead is empty and usable.
func TestACorruptJournalIsSetAside(t *testing.T) {
	tests := []struct{ name, content string }{
		{"not JSON", `{"entries":[{"n":1,"kind":"edit"`},
		{"an unknown kind", `{"entries":[{"n":1,"kind":"teleport","id":"x"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.json")
			for i, kept := range []string{path + ".corrupt", path + ".1.corrupt"} {
				if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
				j, err := OpenJournal(path)
				if !errors.Is(err, ErrCorruptJournal) || !strings.Contains(err.Error(), kept) {
					t.Fatalf("OpenJournal(corrupt #%d) = %v, want ErrCorruptJournal naming %s", i+1, err, kept)
				}
				if j == nil || j.Pending() != 0 {
					t.Fatalf("OpenJournal(corrupt #%d) journal = %v, want an empty one", i+1, j)
				}
				if b, err := os.ReadFile(kept); err != nil || string(b) != tt.content {
					t.Errorf("%s = %q, %v; want the corrupt file as it was", kept, b, err)
				}
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("stat %s after setting it aside = %v, want it gone", path, err)
				}
			}
		})
	}
}
