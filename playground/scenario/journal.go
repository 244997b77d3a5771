package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/logging"
)

// Journal keeps on disk what runs changed in the system and have not put back yet: the
// put-back journal. A run records each change before it makes it (write-ahead), and drops it
// once it has put it back; the journal of a process that died mid-run (killed, out of
// memory, its node lost) still holds them, and the next process puts them back (PutBack).
// Without it a dead run's gateway edits outlive it in the gateway's database, and every
// later run measures a system still carrying them.
//
// The file is JSON, replaced whole on each change (a temporary file in the same directory,
// synced, renamed over it, the directory synced), so a crash leaves the old file or the new,
// never half of one; with nothing left to put back it is removed. One journal serves one
// process at a time. A nil *Journal records nothing. Safe for concurrent use.
type Journal struct {
	path string

	mu      sync.Mutex
	entries []entry
	next    int // the number the next entry gets
}

// entry is one change a run made, as data: what to put back, and how it was found.
type entry struct {
	// N numbers the entry in its journal; 0 for a run without one.
	N int `json:"n"`
	// Kind is entryEdit (a gateway element's stored admin edit), entryKnobs (a service's
	// control knobs) or entryStore (the limiter's store, to bring back up).
	Kind string `json:"kind"`
	// Element is an edit's element kind: limit, route or service.
	Element string `json:"element,omitempty"`
	// ID is the edited element's id, the service whose knobs were turned, or storeID.
	ID string `json:"id"`
	// Prior is the element's stored edit as the run found it; nil: none, the element
	// followed the policy file.
	Prior *adminEdit `json:"prior,omitempty"`
	// Knobs are the service's knobs as the run found them.
	Knobs *control.Knobs `json:"knobs,omitempty"`
}

// The kinds of entry.
const (
	entryEdit  = "edit"
	entryKnobs = "knobs"
	entryStore = "store"
)

// what names the change for the log and the timeline: "route events", "backend catalog".
func (e entry) what() string {
	switch e.Kind {
	case entryKnobs:
		return "backend " + e.ID
	case entryStore:
		return "the limiter's store"
	}
	return e.Element + " " + e.ID
}

// journalFile is the journal's JSON form.
type journalFile struct {
	Entries []entry `json:"entries"`
}

// ErrCorruptJournal reports a journal file that could not be read; OpenJournal has set it
// aside.
var ErrCorruptJournal = errors.New("the put-back journal is unreadable")

// OpenJournal reads the journal at path; a file that does not exist is an empty journal.
// A file that cannot be parsed is renamed to path.corrupt (or path.N.corrupt when that is
// taken), for a person to read, and OpenJournal returns an empty journal and an error
// wrapping ErrCorruptJournal that names where the file went: its changes are not put back,
// and say so loudly. Any other error (the file unreadable) returns a nil journal.
func OpenJournal(path string) (*Journal, error) {
	j := &Journal{path: path, next: 1}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read put-back journal: %w", err)
	}
	var f journalFile
	if err := json.Unmarshal(b, &f); err != nil || !validEntries(f.Entries) {
		if err == nil {
			err = errors.New("an entry of an unknown kind")
		}
		kept, rerr := setAside(path)
		if rerr != nil {
			return nil, fmt.Errorf("%w (%v), and it could not be set aside: %w", ErrCorruptJournal, err, rerr)
		}
		return j, fmt.Errorf("%w (%v); kept as %s, its changes not put back", ErrCorruptJournal, err, kept)
	}
	j.entries = f.Entries
	for _, e := range j.entries {
		j.next = max(j.next, e.N+1)
	}
	return j, nil
}

func validEntries(es []entry) bool {
	for _, e := range es {
		switch {
		case e.Kind == entryEdit && e.Element != "" && e.ID != "":
		case e.Kind == entryKnobs && e.ID != "" && e.Knobs != nil:
		case e.Kind == entryStore && e.ID != "":
		default:
			return false
		}
	}
	return true
}

// setAside renames a corrupt journal to a name no other file has, and returns it.
func setAside(path string) (string, error) {
	kept := path + ".corrupt"
	for n := 1; ; n++ {
		if _, err := os.Lstat(kept); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if n == 100 {
			return "", fmt.Errorf("%s and 99 more are taken", path+".corrupt")
		}
		kept = fmt.Sprintf("%s.%d.corrupt", path, n)
	}
	if err := os.Rename(path, kept); err != nil {
		return "", err
	}
	return kept, syncDir(filepath.Dir(path))
}

// Path is where the journal is kept; "" for nil.
func (j *Journal) Path() string {
	if j == nil {
		return ""
	}
	return j.path
}

// Pending is how many changes the journal holds that have not been put back; 0 for nil.
func (j *Journal) Pending() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}

// add records e, numbered, on disk before it returns; on error e is not recorded, and the
// change must not be made.
func (j *Journal) add(e entry) (entry, error) {
	if j == nil {
		return e, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	e.N = j.next
	entries := append(slices.Clone(j.entries), e)
	if err := j.write(entries); err != nil {
		return e, err
	}
	j.entries = entries
	j.next++
	return e, nil
}

// drop removes the entries numbered ns, put back; the file goes with the last.
func (j *Journal) drop(ns []int) error {
	if j == nil || len(ns) == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	left := slices.DeleteFunc(slices.Clone(j.entries), func(e entry) bool { return slices.Contains(ns, e.N) })
	if err := j.write(left); err != nil {
		return err
	}
	j.entries = left
	return nil
}

// pending returns the entries held, oldest first.
func (j *Journal) pending() []entry {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// write replaces the file with entries, or removes it when there are none.
func (j *Journal) write(entries []entry) error {
	dir := filepath.Dir(j.path)
	if len(entries) == 0 {
		if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove put-back journal: %w", err)
		}
		return syncDir(dir)
	}
	b, err := json.MarshalIndent(journalFile{Entries: entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode put-back journal: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("put-back journal: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(j.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("put-back journal: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), j.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write put-back journal: %w", err)
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// PutBack puts back every change j holds, in the system t describes, last first, each once,
// as the run that made them would have; each one put back leaves the journal. It returns the
// failures, joined; their entries stay in j for another try. A change that was recorded but
// never made (the process died in between) is put back harmlessly: what was in force is
// written again. log records each put-back; nil discards.
func PutBack(ctx context.Context, t Target, j *Journal, log *slog.Logger) error {
	entries := j.pending()
	if len(entries) == 0 {
		return nil
	}
	if log == nil {
		log = logging.Discard()
	}
	sys, err := newSystem(t)
	if err != nil {
		return err
	}
	defer sys.close()
	done, errs := sys.putBack(ctx, entries, log)
	if err := j.drop(done); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// putBack puts entries back, last first, each once, logging each; it returns the numbers of
// those put back and the failures.
func (s *system) putBack(ctx context.Context, entries []entry, log *slog.Logger) (done []int, errs []error) {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		var err error
		switch e.Kind {
		case entryKnobs:
			err = s.setKnobs(ctx, e.ID, *e.Knobs)
		case entryStore:
			_, err = s.setStore(ctx, StoreUp)
		default:
			err = s.restoreEdit(ctx, e.Element, e.ID, e.Prior)
		}
		if err != nil {
			log.Warn("put back", "what", e.what(), "error", err)
			errs = append(errs, fmt.Errorf("put back %s: %w", e.what(), err))
			continue
		}
		log.Info("put back", "what", e.what())
		done = append(done, e.N)
	}
	return done, errs
}
