package policy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"boxoffice.dev/platform/logging"
)

// Live is the running policy. Three sources change it, each building a whole new Snapshot
// that is swapped in atomically:
//
//   - the policy file (ReplaceFile), the baseline;
//   - the admin edits (Apply one; ReplaceEdits with the policy_edit table's), layered on the
//     file: they survive a file reload, re-applied over the new file, and the table makes
//     them every replica's and outlives a restart;
//   - the rate_limit_rule table (ReplaceTenants), per-tenant overrides.
//
// A change whose result does not validate is rejected with the error and the running
// snapshot stays. Current never locks: the request path reads the pointer and nothing else.
// Writers are serialised by a mutex, and OnChange callbacks run in the order of the swaps.
// Live is safe for concurrent use.
type Live struct {
	log *slog.Logger
	cur atomic.Pointer[Snapshot]

	mu       sync.Mutex
	file     *Policy
	edits    edits
	skipped  []string // why ReplaceEdits last left stored edits out
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

// Check reports whether e would apply over the running policy, without applying it: the
// error Apply would return, from the policy alone. The OnChange hooks do not run, so Apply
// may still refuse what Check accepts. A refusal is recorded (Rejected) and logged like any
// rejected change.
func (l *Live) Check(e Edit) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	undo, err := l.edits.apply(e)
	if err == nil {
		_, err = Compile(l.edits.over(l.file), l.tenants)
		undo()
		if err == nil {
			return nil
		}
	}
	return l.reject("admin", err)
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

// SkippedEdits says why ReplaceEdits last left stored edits out; nil when it left none.
func (l *Live) SkippedEdits() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.skipped)
}

// ReplaceEdits makes es, the policy_edit table's rows, the admin edits in place of every one
// held, so that a replica's edits are exactly the table's. An edit that does not apply (it
// no longer fits the file, or is a row this gateway cannot read) is left out with its reason
// logged (when the reasons change) and kept in SkippedEdits, and the others apply: one bad
// row must not hold every replica on stale edits. It is tried again at every call, so it
// applies once the file it needs arrives. The result goes through the OnChange hooks like any
// change. When it equals the edits in force nothing is swapped, so a periodic reload that
// finds nothing new costs a compile and no log line.
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
		_, err := Compile(m.over(l.file), l.tenants)
		return err
	}
	skip := func(e Edit, err error) string { return fmt.Sprintf("policy_edit (%s, %s): %v", e.Kind, e.ID, err) }
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
	}
	return 2
}

func restore[V any](m map[string]V, k string, old V, had bool) {
	if had {
		m[k] = old
	} else {
		delete(m, k)
	}
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
	s, err := Compile(l.edits.over(l.file), l.tenants)
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

// edits are the admin edits by id, layered over the file.
type edits struct {
	Limits   map[string]*Limit  `json:"limits"` // nil: deleted
	Routes   map[string]Route   `json:"routes"`
	Services map[string]Service `json:"services"`
}

func newEdits() edits {
	return edits{Limits: map[string]*Limit{}, Routes: map[string]Route{}, Services: map[string]Service{}}
}

// apply puts e in m and returns how to put back what it replaced.
func (m edits) apply(e Edit) (undo func(), err error) {
	if e.Deleted && e.Kind != EditLimit {
		return nil, fmt.Errorf("%s %q: only a limit can be deleted", e.Kind, e.ID)
	}
	switch e.Kind {
	case EditLimit:
		if e.Deleted {
			return set(m.Limits, e.ID, nil), nil
		}
		var lim Limit
		if err := e.decode(&lim, &lim.ID); err != nil {
			return nil, err
		}
		// Checked alone first, so a bad field is named as the client sent it ("rate"),
		// not by its place in the composed policy.
		if err := ValidateLimit("", lim.withDefaults()); err != nil {
			return nil, err
		}
		return set(m.Limits, e.ID, &lim), nil
	case EditRoute:
		var r Route
		if err := e.decode(&r, &r.ID); err != nil {
			return nil, err
		}
		return set(m.Routes, e.ID, r), nil
	case EditService:
		var sv Service
		if err := e.decode(&sv, &sv.Name); err != nil {
			return nil, err
		}
		return set(m.Services, e.ID, sv), nil
	}
	return nil, fmt.Errorf("%s %q: kind: want limit, route or service", e.Kind, e.ID)
}

// list returns m as edits, ordered by kind and id.
func (m edits) list() []Edit {
	var out []Edit
	for _, id := range sortedKeys(m.Limits) {
		if lim := m.Limits[id]; lim != nil {
			out = append(out, LimitEdit(*lim))
		} else {
			out = append(out, LimitDeletion(id))
		}
	}
	for _, id := range sortedKeys(m.Routes) {
		out = append(out, RouteEdit(m.Routes[id]))
	}
	for _, name := range sortedKeys(m.Services) {
		out = append(out, ServiceEdit(m.Services[name]))
	}
	return out
}

func (m edits) len() int { return len(m.Limits) + len(m.Routes) + len(m.Services) }

// equal compares m and o as JSON, which writes maps in key order: edits decoded from the
// same rows compare equal whatever their maps' order or their slices' nil-ness.
func (m edits) equal(o edits) bool {
	a, _ := json.Marshal(m) // plain data: never fails
	b, _ := json.Marshal(o)
	return bytes.Equal(a, b)
}

// set puts v at k in m and returns how to put back what was there.
func set[V any](m map[string]V, k string, v V) (undo func()) {
	old, had := m[k]
	m[k] = v
	return func() { restore(m, k, old, had) }
}

// over layers m over file, in id order so the result never depends on map order. A deleted
// limit is also taken off every route that lists it.
func (m edits) over(file *Policy) *Policy {
	p := file.Clone()
	var deleted []string
	for _, id := range sortedKeys(m.Limits) {
		lim := m.Limits[id]
		i := slices.IndexFunc(p.Limits, func(x Limit) bool { return x.ID == id })
		switch {
		case lim == nil:
			deleted = append(deleted, id)
			if i >= 0 {
				p.Limits = slices.Delete(p.Limits, i, i+1)
			}
		case i >= 0:
			p.Limits[i] = *lim
		default:
			p.Limits = append(p.Limits, *lim)
		}
	}
	for _, id := range sortedKeys(m.Routes) {
		r := m.Routes[id]
		if i := slices.IndexFunc(p.Routes, func(x Route) bool { return x.ID == id }); i >= 0 {
			p.Routes[i] = r
		} else {
			p.Routes = append(p.Routes, r)
		}
	}
	for i := range p.Routes {
		p.Routes[i].Limits = slices.DeleteFunc(slices.Clone(p.Routes[i].Limits), func(x string) bool { return slices.Contains(deleted, x) })
	}
	for _, name := range sortedKeys(m.Services) {
		sv := m.Services[name]
		if i := slices.IndexFunc(p.Services, func(x Service) bool { return x.Name == name }); i >= 0 {
			p.Services[i] = sv
		} else {
			p.Services = append(p.Services, sv)
		}
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// withDefaults returns l with its defaults applied.
func (l Limit) withDefaults() Limit {
	p := (&Policy{Limits: []Limit{l}}).withDefaults()
	return p.Limits[0]
}
