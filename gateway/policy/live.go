package policy

import (
	"cmp"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"boxoffice.dev/platform/logging"
)

// Live is the running policy. The file (ReplaceFile), the admin edits layered over it (Apply,
// ReplaceEdits) and the per-tenant overrides (ReplaceTenants) each change it by building a
// whole new Snapshot swapped in atomically; a change that does not validate is rejected and
// the running one stays. Current never locks; writers are serialised, and OnChange callbacks
// run in the order of the swaps. Safe for concurrent use. See docs/lessons/gateway.md.
type Live struct {
	log *slog.Logger
	cur atomic.Pointer[Snapshot]

	mu       sync.Mutex
	file     *Policy
	edits    edits
	skipped  []string // why ReplaceEdits last left stored edits out
	unlaid   []string // why the policy in force leaves held edits out: patches of nothing
	version  uint64   // changes to the edits held: see EditsVersion
	tenants  []TenantRule
	onChange []func(*Snapshot) error
	rejected error
}

// NewLive compiles file as the first snapshot; log (nil = discard) records every change.
func NewLive(file *Policy, log *slog.Logger) (*Live, error) {
	if log == nil {
		log = logging.Discard()
	}
	s, err := Compile(file, nil)
	if err != nil {
		return nil, err
	}
	l := &Live{log: log, file: file, edits: newEdits()}
	l.cur.Store(s)
	return l, nil
}

// Current is the snapshot in force. Never nil.
func (l *Live) Current() *Snapshot { return l.cur.Load() }

// OnChange registers f to apply each new snapshot to what lives outside it (the upstream
// pools) just before the snapshot is swapped in; an error from f rejects the change and the
// running snapshot stays. Hooks run in registration order on the goroutine that made the
// change, with other writers held off: keep them short, and let at most one of them fail.
func (l *Live) OnChange(f func(*Snapshot) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onChange = append(l.onChange, f)
}

// Rejected is the last change that did not validate, nil when the last change applied.
func (l *Live) Rejected() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rejected
}

// ReplaceFile makes p the baseline, keeping the admin edits on top.
func (l *Live) ReplaceFile(p *Policy) error {
	return l.change("file", func() (func(), error) {
		file := l.file
		l.file = p
		return func() { l.file = file }, nil
	})
}

// ReplaceFileData parses data as the policy file and makes it the baseline.
func (l *Live) ReplaceFileData(data []byte) error {
	return l.change("file", func() (func(), error) {
		p, err := Parse(data)
		if err != nil {
			return nil, err
		}
		file := l.file
		l.file = p
		return func() { l.file = file }, nil
	})
}

// ReplaceTenants sets the per-tenant overrides.
func (l *Live) ReplaceTenants(ts []TenantRule) error {
	return l.change("rate_limit_rule", func() (func(), error) {
		if slices.Equal(l.tenants, ts) { // the periodic reload mostly finds nothing new
			return nil, nil
		}
		old := l.tenants
		l.tenants = slices.Clone(ts)
		return func() { l.tenants = old }, nil
	})
}

// Check reports whether e, an edit an admin is making (a row Merge made), would apply over
// the running policy, without applying it or running the OnChange hooks (so Apply may still
// refuse it). It also refuses what Apply would apply as nothing its author asked for: a patch
// of an element the file lacks, a route listing a limit an edit deleted. A refusal is
// recorded (Rejected) and logged like any rejected change.
func (l *Live) Check(e Edit) error {
	_, err := l.Preview(e)
	return err
}

// check is Check's test; it returns the snapshot e would give. l.mu is held.
func (l *Live) check(e Edit) (*Snapshot, error) {
	if err := l.edits.namesDeleted(e); err != nil {
		return nil, err
	}
	undo, err := l.edits.apply(e)
	if err != nil {
		return nil, err
	}
	defer undo()
	p, left := l.edits.over(l.file)
	if i := slices.IndexFunc(left, func(s skippedEdit) bool { return keyOf(s.e) == keyOf(e) }); i >= 0 {
		return nil, fmt.Errorf("%s %q: %w", e.Kind, e.ID, left[i].err)
	}
	if i := slices.IndexFunc(p.Limits, func(x Limit) bool { return x.ID == e.ID }); e.Kind == EditLimit && e.Patch && i >= 0 {
		// As a whole limit is in apply: a bad field is named as the client sent it ("lease").
		if err := ValidateLimit("", p.Limits[i].withDefaults()); err != nil {
			return nil, err
		}
	}
	return Compile(p, l.tenants)
}

// Merge returns the row that stands for e's element once e is layered over the edit held for
// it: the row to Check, store and Apply. A whole element or a deletion stands alone. A patch
// over a patch is the two merged, the later one's fields winning; over a whole element it is
// that element patched, whole still; over nothing it is itself; over a deleted limit it is
// refused, with an error. A route's merge leaves out the limits an edit deleted, which the
// route runs without.
func (l *Live) Merge(e Edit) (Edit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.edits.merge(e)
}

// Apply layers e over the file, in place of any edit of the same element.
func (l *Live) Apply(e Edit) error {
	return l.change("admin", func() (func(), error) {
		l.version++
		return l.edits.apply(e)
	})
}

// DropEdits takes the edits drop selects off this replica, at once: the change a replica
// without a policy_edit table makes for DELETE /admin/edits.
func (l *Live) DropEdits(drop func(Edit) bool) error {
	return l.change("admin", func() (func(), error) {
		l.version++
		next := newEdits()
		for _, e := range l.edits.list() {
			if !drop(e) {
				_, _ = next.apply(e) // it applied before, alone
			}
		}
		if next.equal(l.edits) {
			return nil, nil
		}
		old := l.edits
		l.edits = next
		return func() { l.edits = old }, nil
	})
}

// EditsVersion counts the changes to the admin edits this replica has made or taken: an
// Apply, a drop it wrote to the table (EditsStored), a replacement by the table's rows. A
// reader of the policy_edit table takes it before reading, so that ReplaceEditsAt can tell
// rows that may predate a change made meanwhile.
func (l *Live) EditsVersion() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// EditsStored records that this replica has just changed the policy_edit table (dropped
// rows): a reload that read the table before is stale and must read it again.
func (l *Live) EditsStored() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.version++
}

// ReplaceEditsAt is ReplaceEdits for rows read from the table when EditsVersion was version.
// If the edits changed here since, the rows may have been read before the change was stored
// (an edit taken, a drop, a newer reload), and replacing the edits with them would undo it
// until the next reload: nothing changes, it reports false, and the caller reads the table
// again.
func (l *Live) ReplaceEditsAt(version uint64, es []Edit) (bool, error) {
	replaced := true
	err := l.change("policy_edit", func() (func(), error) {
		if l.version != version {
			replaced = false
			return nil, nil
		}
		return l.replaceEdits(es)
	})
	return replaced, err
}

// Edits are the admin edits in force, ordered by kind and id, their UpdatedAt zero.
func (l *Live) Edits() []Edit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.edits.list()
}

// SkippedEdits says why the policy in force leaves admin edits out: the stored edits
// ReplaceEdits last left out, then the patches of an element the file does not have, which
// are held and apply once the file has it; nil when it leaves none out.
func (l *Live) SkippedEdits() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Concat(l.skipped, l.unlaid)
}

// ReplaceEdits makes es, the policy_edit table's rows, this replica's admin edits. An edit
// that does not apply is left out, kept in SkippedEdits and tried again at every call, and
// the others apply: one bad row must not hold every replica on stale edits. When es equals
// the edits in force nothing is swapped, so a periodic reload that finds nothing new costs a
// compile and no log line.
func (l *Live) ReplaceEdits(es []Edit) error {
	return l.change("policy_edit", func() (func(), error) { return l.replaceEdits(es) })
}

// replaceEdits is ReplaceEdits's change. l.mu is held.
func (l *Live) replaceEdits(es []Edit) (func(), error) {
	next, skipped := l.fit(es)
	if !slices.Equal(skipped, l.skipped) {
		for _, msg := range skipped {
			l.log.Warn("policy: admin edit skipped", "reason", msg)
		}
		l.skipped = skipped
	}
	if next.equal(l.edits) {
		return nil, nil
	}
	old := l.edits
	l.edits = next
	l.version++
	return func() { l.edits, l.version = old, l.version-1 }, nil
}

// fit returns the edits of es that apply over the file, and why the others do not. The whole
// set is tried first, one compile; only when it fails are the edits added one at a time,
// services first, then limits, then routes, so an edit comes after those it may name.
// l.mu is held.
func (l *Live) fit(es []Edit) (edits, []string) {
	es = slices.SortedFunc(slices.Values(es), byDependency)
	fits := func(m edits) error {
		p, _ := m.over(l.file) // a patch of nothing is held, and reported by swap
		_, err := Compile(p, l.tenants)
		return err
	}
	skip := func(e Edit, err error) string { return skippedEdit{e, err}.String() }
	all, unread := newEdits(), []string(nil)
	for _, e := range es {
		if _, err := all.apply(e); err != nil {
			unread = append(unread, skip(e, err))
		}
	}
	if fits(all) == nil {
		return all, unread
	}
	some, skipped := newEdits(), []string(nil)
	for _, e := range es {
		undo, err := some.apply(e)
		if err == nil {
			if err = fits(some); err != nil {
				undo()
			}
		}
		if err != nil {
			skipped = append(skipped, skip(e, err))
		}
	}
	return some, skipped
}

// byDependency orders services before limits before routes (a route names both), then by id.
func byDependency(a, b Edit) int {
	if c := cmp.Compare(a.Kind.rank(), b.Kind.rank()); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

func (k EditKind) rank() int {
	switch k {
	case EditService:
		return 0
	case EditLimit:
		return 1
	case EditRoute:
		return 2
	}
	return -1
}

// change applies edit, compiles the result and swaps it in; if it does not compile, the
// edit is undone and the error returned. An edit that returns a nil undo and no error
// changed nothing: there is nothing to swap.
func (l *Live) change(source string, edit func() (undo func(), err error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	undo, err := edit()
	if err == nil && undo == nil {
		return nil
	}
	if err == nil {
		if err = l.swap(source); err == nil {
			return nil
		}
		undo()
	}
	return l.reject(source, err)
}

// swap compiles the policy as held, lets the hooks apply it and swaps it in. l.mu is held.
func (l *Live) swap(source string) error {
	p, left := l.edits.over(l.file)
	s, err := Compile(p, l.tenants)
	if err != nil {
		return err
	}
	for _, f := range l.onChange {
		if err := f(s); err != nil {
			return err
		}
	}
	l.cur.Store(s)
	l.rejected = nil
	var unlaid []string
	for _, sk := range left {
		unlaid = append(unlaid, sk.String())
	}
	if !slices.Equal(unlaid, l.unlaid) {
		for _, msg := range unlaid {
			l.log.Warn("policy: admin edit skipped", "reason", msg)
		}
		l.unlaid = unlaid
	}
	for _, msg := range s.Skipped {
		l.log.Warn("policy: tenant override skipped", "reason", msg)
	}
	l.log.Info("policy changed", "source", source, "routes", len(s.routes), "limits", len(s.limits),
		"admin_edits", l.edits.len(), "tenant_overrides", len(s.Tenants))
	return nil
}

// reject records and logs a refused change, the running snapshot untouched. l.mu is held.
func (l *Live) reject(source string, err error) error {
	err = fmt.Errorf("policy: %s change rejected: %w", source, err)
	l.rejected = err
	l.log.Error("policy change rejected; the running policy stays", "source", source, "error", err)
	return err
}

// RunsFile reports whether p is the policy file that live runs on, as the file was parsed:
// comments and layout aside, the same document.
func (l *Live) RunsFile(p *Policy) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return reflect.DeepEqual(l.file, p)
}
