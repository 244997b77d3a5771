package policy

import (
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
//   - the admin API (PutLimit, DeleteLimit, PutRoute, PutService), whose edits are layered on
//     the file: they survive a file reload, re-applied over the new file, but not a restart;
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
	limits   map[string]*Limit // admin edits; nil = deleted
	routes   map[string]Route
	services map[string]Service
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
	l := &Live{log: log, file: file, limits: map[string]*Limit{}, routes: map[string]Route{}, services: map[string]Service{}}
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
	l.mu.Lock()
	same := slices.Equal(l.tenants, ts)
	l.mu.Unlock()
	if same { // the periodic reload mostly finds nothing new: no swap, no log line
		return nil
	}
	return l.change("rate_limit_rule", func() (func(), error) {
		old := l.tenants
		l.tenants = slices.Clone(ts)
		return func() { l.tenants = old }, nil
	})
}

// PutLimit adds the limit or replaces the one with its id.
func (l *Live) PutLimit(lim Limit) error {
	return l.change("admin", func() (func(), error) {
		d := lim.withDefaults()
		if err := ValidateLimit("", d); err != nil {
			return nil, err
		}
		old, had := l.limits[lim.ID]
		l.limits[lim.ID] = &lim
		return func() { restore(l.limits, lim.ID, old, had) }, nil
	})
}

// DeleteLimit removes the limit and takes it off every route; false if there is none.
func (l *Live) DeleteLimit(id string) (bool, error) {
	if l.Current().Limit(id) == nil {
		return false, nil
	}
	return true, l.change("admin", func() (func(), error) {
		old, had := l.limits[id]
		l.limits[id] = nil
		return func() { restore(l.limits, id, old, had) }, nil
	})
}

// PutRoute adds the route or replaces the one with its id.
func (l *Live) PutRoute(r Route) error {
	return l.change("admin", func() (func(), error) {
		old, had := l.routes[r.ID]
		l.routes[r.ID] = r
		return func() { restore(l.routes, r.ID, old, had) }, nil
	})
}

// PutService adds the service or replaces the one with its name.
func (l *Live) PutService(sv Service) error {
	return l.change("admin", func() (func(), error) {
		old, had := l.services[sv.Name]
		l.services[sv.Name] = sv
		return func() { restore(l.services, sv.Name, old, had) }, nil
	})
}

func restore[V any](m map[string]V, k string, old V, had bool) {
	if had {
		m[k] = old
	} else {
		delete(m, k)
	}
}

// change applies edit, compiles the result and swaps it in; if it does not compile, the
// edit is undone and the error returned.
func (l *Live) change(source string, edit func() (undo func(), err error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	undo, err := edit()
	if err == nil {
		var s *Snapshot
		if s, err = Compile(l.compose(), l.tenants); err == nil {
			for _, f := range l.onChange {
				if err = f(s); err != nil {
					break
				}
			}
		}
		if err == nil {
			l.cur.Store(s)
			l.rejected = nil
			for _, msg := range s.Skipped {
				l.log.Warn("policy: tenant override skipped", "reason", msg)
			}
			l.log.Info("policy changed", "source", source, "routes", len(s.routes), "limits", len(s.limits), "tenant_overrides", len(s.Tenants))
			return nil
		}
		undo()
	}
	err = fmt.Errorf("policy: %s change rejected: %w", source, err)
	l.rejected = err
	l.log.Error("policy change rejected; the running policy stays", "source", source, "error", err)
	return err
}

// compose layers the admin edits over the file, in id order so the result never depends on
// map order. A deleted limit is also taken off every route that lists it.
func (l *Live) compose() *Policy {
	p := l.file.Clone()
	var deleted []string
	for _, id := range sortedKeys(l.limits) {
		lim := l.limits[id]
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
	for _, id := range sortedKeys(l.routes) {
		r := l.routes[id]
		if i := slices.IndexFunc(p.Routes, func(x Route) bool { return x.ID == id }); i >= 0 {
			p.Routes[i] = r
		} else {
			p.Routes = append(p.Routes, r)
		}
	}
	for i := range p.Routes {
		p.Routes[i].Limits = slices.DeleteFunc(slices.Clone(p.Routes[i].Limits), func(x string) bool { return slices.Contains(deleted, x) })
	}
	for _, name := range sortedKeys(l.services) {
		sv := l.services[name]
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
