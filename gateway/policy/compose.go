package policy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// edits are the admin edits in force, one per element, as the policy_edit table holds them:
// a whole element, a patch of the file's, or a deleted limit. Each is kept normalised (see
// Edit.normal), so that edits read from the same rows always compare equal.
type edits map[editKey]Edit

type editKey struct {
	kind EditKind
	id   string
}

func keyOf(e Edit) editKey { return editKey{e.Kind, e.ID} }

func newEdits() edits { return edits{} }

// apply puts e in m, in place of the element's edit, and returns how to put back what it
// replaced.
func (m edits) apply(e Edit) (undo func(), err error) {
	if e, err = e.normal(); err != nil {
		return nil, err
	}
	k := keyOf(e)
	old, had := m[k]
	m[k] = e
	return func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	}, nil
}

// list returns m ordered by kind and id.
func (m edits) list() []Edit {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b Edit) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID)) })
	return out
}

func (m edits) len() int { return len(m) }

// equal compares m and o as JSON: edits normalised from the same rows compare equal.
func (m edits) equal(o edits) bool {
	a, _ := json.Marshal(m.list()) // plain data: never fails
	b, _ := json.Marshal(o.list())
	return bytes.Equal(a, b)
}

func (m edits) deletes(limit string) bool {
	e, ok := m[editKey{EditLimit, limit}]
	return ok && e.Deleted
}

// merge returns the row that stands for e's element once e is layered over m (Live.Merge).
func (m edits) merge(e Edit) (Edit, error) {
	e, err := e.normal()
	held, ok := m[keyOf(e)]
	if err != nil || !e.Patch || !ok {
		return e, err
	}
	if held.Deleted {
		return Edit{}, fmt.Errorf("%s %q: deleted by an admin edit: drop that edit or put the %s again", e.Kind, e.ID, e.Kind)
	}
	base, _ := tree(held.Value) // normalised: never fails
	patch, _ := tree(e.Value)
	if e.Kind == EditRoute {
		// The route runs without them; keeping them would refuse a patch of another field.
		base = m.withoutDeleted(base)
	}
	if held.Patch {
		e.Value = marshal(composePatches(base, patch))
	} else {
		e.Value, e.Patch = marshal(mergePatch(base, patch)), false
	}
	return e.normal()
}

// withoutDeleted returns route, a route's fields, without the limits m deletes.
func (m edits) withoutDeleted(route map[string]any) map[string]any {
	limits, ok := route["limits"].([]any)
	if !ok {
		return route
	}
	route = maps.Clone(route)
	route["limits"] = slices.DeleteFunc(slices.Clone(limits), func(v any) bool {
		id, _ := v.(string)
		return m.deletes(id)
	})
	return route
}

// namesDeleted refuses a route edit whose own limits list one that m deletes. Composed, the
// route would run without it (over takes a deleted limit off every route, so that DELETE of
// a limit applies to the routes that listed it), where a limit the policy lacks is otherwise
// refused: the author of the route would not learn that it is unlimited.
func (m edits) namesDeleted(e Edit) error {
	if e.Kind != EditRoute || e.Deleted {
		return nil
	}
	fields, err := tree(e.Value)
	if err != nil {
		return nil // not a route: apply says why
	}
	limits, _ := fields["limits"].([]any)
	for j, v := range limits {
		if id, _ := v.(string); m.deletes(id) {
			return fieldErr(fmt.Sprintf("routes[%s].limits[%d]", e.ID, j),
				"limit %q is deleted by an admin edit: drop that edit (limit %s) or put the limit again", id, id)
		}
	}
	return nil
}

// skippedEdit is an edit left out of the policy, and why.
type skippedEdit struct {
	e   Edit
	err error
}

func (s skippedEdit) String() string {
	return fmt.Sprintf("policy_edit (%s, %s): %v", s.e.Kind, s.e.ID, s.err)
}

// errNothingToPatch is why a patch of an element the file does not have applies nothing.
var errNothingToPatch = errors.New("the policy file has no such element to patch; the patch applies once it has")

// over layers m over file, in kind and id order so the result never depends on map order,
// and returns the edits it left out: a patch of an element the file does not have. A deleted
// limit is also taken off every route that lists it.
func (m edits) over(file *Policy) (*Policy, []skippedEdit) {
	p := file.Clone()
	var deleted []string
	var left []skippedEdit
	for _, e := range m.list() {
		var err error
		switch e.Kind {
		case EditLimit:
			p.Limits, err = layer(p.Limits, func(l *Limit) *string { return &l.ID }, e)
			if e.Deleted {
				deleted = append(deleted, e.ID)
			}
		case EditRoute:
			p.Routes, err = layer(p.Routes, func(r *Route) *string { return &r.ID }, e)
		case EditService:
			p.Services, err = layer(p.Services, func(s *Service) *string { return &s.Name }, e)
		}
		if err != nil {
			left = append(left, skippedEdit{e, err})
		}
	}
	for i := range p.Routes {
		p.Routes[i].Limits = slices.DeleteFunc(slices.Clone(p.Routes[i].Limits), func(x string) bool { return slices.Contains(deleted, x) })
	}
	return p, left
}

// layer puts e, an edit of one of list's elements, whose id field is id, in list.
func layer[T any](list []T, id func(*T) *string, e Edit) ([]T, error) {
	i := slices.IndexFunc(list, func(x T) bool { return *id(&x) == e.ID })
	if e.Deleted {
		if i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
		return list, nil
	}
	data := []byte(e.Value)
	if e.Patch {
		if i < 0 {
			return list, errNothingToPatch
		}
		base, _ := tree(marshal(list[i])) // plain data: never fails
		patch, _ := tree(e.Value)         // normalised: never fails
		data = marshal(mergePatch(base, patch))
	}
	var v T
	if err := e.decode(data, &v, id(&v)); err != nil {
		return list, err
	}
	if i >= 0 {
		list[i] = v
	} else {
		list = append(list, v)
	}
	return list, nil
}

// normal returns e checked as far as it can be alone, in the one form the same edit always
// takes: a whole element as its type writes it, a patch with its keys sorted, no UpdatedAt.
func (e Edit) normal() (Edit, error) {
	out := Edit{Kind: e.Kind, ID: e.ID, Patch: e.Patch, Deleted: e.Deleted}
	if e.Kind.rank() < 0 {
		return Edit{}, fmt.Errorf("%s %q: kind: want limit, route or service", e.Kind, e.ID)
	}
	if e.Deleted {
		if e.Kind != EditLimit {
			return Edit{}, fmt.Errorf("%s %q: only a limit can be deleted", e.Kind, e.ID)
		}
		if e.Patch {
			return Edit{}, fmt.Errorf("%s %q: a deletion is not a patch", e.Kind, e.ID)
		}
		return out, nil
	}
	data := []byte(e.Value)
	var patch map[string]any
	if e.Patch {
		var err error
		if patch, err = tree(e.Value); err != nil {
			return Edit{}, fmt.Errorf("%s %q: a patch is a JSON object: %w", e.Kind, e.ID, err)
		}
		// Over an empty element: every field it sets must read as its type's.
		data = marshal(mergePatch(nil, patch))
	}
	v, err := e.element(data)
	if err != nil {
		return Edit{}, err
	}
	if lim, ok := v.(Limit); ok && !e.Patch {
		// Checked alone first, so a bad field is named as the client sent it ("rate"), not
		// by its place in the composed policy.
		if err := ValidateLimit("", lim.withDefaults()); err != nil {
			return Edit{}, err
		}
	}
	if e.Patch {
		out.Value = marshal(patch)
	} else {
		out.Value = marshal(v)
	}
	return out, nil
}

// element decodes data as e's kind of element.
func (e Edit) element(data []byte) (any, error) {
	switch e.Kind {
	case EditLimit:
		var lim Limit
		err := e.decode(data, &lim, &lim.ID)
		return lim, err
	case EditRoute:
		var r Route
		err := e.decode(data, &r, &r.ID)
		return r, err
	default:
		var sv Service
		err := e.decode(data, &sv, &sv.Name)
		return sv, err
	}
}

// mergePatch applies patch to target as RFC 7396 does: an object's members are set, merged
// when both are objects, removed when null; anything else replaces target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, _ := target.(map[string]any)
	t = maps.Clone(t)
	if t == nil {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

// composePatches returns one patch doing a then b: b's members win, merged into a's where both
// are objects, nulls kept so that they still reset the file's field. Where a sets a field to
// null or a scalar and b to an object, the result merges b's object into the file's rather
// than into nothing: RFC 7396 patches cannot say "replace this object whole", and the fields
// a PATCH sent are what it is kept for.
func composePatches(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	for k, v := range b {
		bo, bok := v.(map[string]any)
		ao, aok := out[k].(map[string]any)
		if bok && aok {
			out[k] = composePatches(ao, bo)
		} else {
			out[k] = v
		}
	}
	return out
}

// tree decodes data, a JSON object, keeping numbers as written.
func tree(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("got null")
	}
	return m, nil
}

func marshal(v any) json.RawMessage {
	b, _ := json.Marshal(v) // plain data: never fails
	return b
}

// withDefaults returns l with its defaults applied.
func (l Limit) withDefaults() Limit {
	p := (&Policy{Limits: []Limit{l}}).withDefaults()
	return p.Limits[0]
}
