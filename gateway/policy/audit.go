package policy

import (
	"encoding/json"
	"regexp"
	"slices"
	"time"
)

// ChangeKind is what a recorded change changed: an element of the policy (a limit, route or
// service), a per-tenant override, the policy file, or every admin edit at once.
type ChangeKind string

// The kinds of recorded change.
const (
	ChangeLimit       ChangeKind = "limit"
	ChangeRoute       ChangeKind = "route"
	ChangeService     ChangeKind = "service"
	ChangeTenantLimit ChangeKind = "tenant-limit"
	ChangeFileReload  ChangeKind = "file-reload"
	ChangeReset       ChangeKind = "reset"
)

// ChangeKinds are the kinds of recorded change, in the order the docs list them.
var ChangeKinds = []ChangeKind{ChangeLimit, ChangeRoute, ChangeService, ChangeTenantLimit, ChangeFileReload, ChangeReset}

// Valid reports whether k is one of ChangeKinds.
func (k ChangeKind) Valid() bool { return slices.Contains(ChangeKinds, k) }

// Change is one entry of the audit trail of the policy: who changed what, when, and what it
// was before. Before and After are JSON of whatever the rule is: the element as it ran (null
// where it did not exist), the file's policy for a reload, the edits dropped for a reset. The
// store stamps ChangeID and At. See docs/lessons/gateway.md, "Who changed the policy".
type Change struct {
	ChangeID string    `json:"change_id"`
	At       time.Time `json:"at"`
	// Actor is who or what made it: "admin" (the admin token), "admin:<name>" (an admin
	// caller naming itself with the Admin-Actor header, the playground's runs), "file:<path>".
	Actor string `json:"actor"`
	// Replica is the gateway replica that made it: the one that took the admin call, or
	// read its own policy file. A replica that only follows the tables records nothing.
	Replica string     `json:"replica"`
	Kind    ChangeKind `json:"kind"`
	// ID is the element's id: a limit's, route's or service's, "tenant/route" for a
	// per-tenant override, the file's path for a reload, "*" for a reset.
	ID string `json:"id"`
	// Action is what was asked: put, patch, delete, drop-edit, reset or reload.
	Action string          `json:"action"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// ValidActor reports whether s may be a Change's Actor, or the name an admin caller gives
// itself: 1 to 128 letters, digits or . _ : / -. The trail is filtered by actor and prefix,
// and the name comes from a header, so it is held to short printable ASCII.
func ValidActor(s string) bool { return actorName.MatchString(s) }

var actorName = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)

// The actions of a recorded change.
const (
	ActionPut      = "put"
	ActionPatch    = "patch"
	ActionDelete   = "delete"
	ActionDropEdit = "drop-edit"
	ActionReset    = "reset"
	ActionReload   = "reload"
)

// JSONOf is v as JSON for Change.Before and After; nil (an untyped nil, or a nil pointer) is
// JSON null, an element that does not exist.
func JSONOf(v any) json.RawMessage {
	b, err := json.Marshal(v) // plain data
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// Element is the limit, route or service of kind with id as s runs it, defaults applied; nil
// when s has none.
func (s *Snapshot) Element(kind EditKind, id string) any {
	switch kind {
	case EditLimit:
		if l := s.Limit(id); l != nil {
			return l.Limit
		}
	case EditRoute:
		if r := s.Route(id); r != nil {
			return r.Route
		}
	case EditService:
		if i := slices.IndexFunc(s.Policy.Services, func(sv Service) bool { return sv.Name == id }); i >= 0 {
			return s.Policy.Services[i]
		}
	}
	return nil
}

// Preview returns the snapshot applying e would swap in, without swapping it or running the
// OnChange hooks: Check, with its outcome, so that the audit trail can record the element
// after the change in the same transaction as the change. A refusal is recorded as Check's.
func (l *Live) Preview(e Edit) (*Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := l.check(e)
	if err != nil {
		return nil, l.reject("admin", err)
	}
	return s, nil
}

// PreviewDrop returns the snapshot dropping the edits drop selects would give, the others
// fitted over the file as ReplaceEdits fits the table's rows. Nothing changes.
func (l *Live) PreviewDrop(drop func(Edit) bool) (*Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next, _ := l.fit(slices.DeleteFunc(l.edits.list(), drop))
	p, _ := next.over(l.file)
	return Compile(p, l.tenants)
}

// File is the policy file live runs on, as parsed. Read-only.
func (l *Live) File() *Policy {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file
}
