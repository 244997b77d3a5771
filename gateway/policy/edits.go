package policy

import (
	"encoding/json"
	"fmt"
	"time"
)

// EditKind is what an admin edit changes.
type EditKind string

// The kinds of admin edit.
const (
	EditLimit   EditKind = "limit"
	EditRoute   EditKind = "route"
	EditService EditKind = "service"
)

// Edit is one admin API change layered over the policy file, as Live applies it and the
// policy_edit table stores it: the limit, route or service with ID (a service's id is its
// name) put whole as Value; or, Patch, the fields of Value set over the element the policy
// file has; or, Deleted, the limit ID taken off the policy and off every route that lists it.
// Build one with LimitEdit, RouteEdit, ServiceEdit, PatchEdit or LimitDeletion.
type Edit struct {
	Kind EditKind `json:"kind"`
	ID   string   `json:"id"`
	// Value is the Limit, Route or Service as JSON, defaults not applied, or with Patch a
	// JSON merge patch of one (RFC 7396: the fields it names are set, a null one is reset to
	// its default, the others are the file's); nil when Deleted.
	Value json.RawMessage `json:"value,omitempty"`
	// Patch marks a Value that patches the file's element rather than replacing it, so that
	// a later change of the file to the fields it leaves alone still applies. A patch of an
	// element the file does not have applies nothing, and Live reports it as skipped.
	Patch bool `json:"patch,omitempty"`
	// Deleted marks a limit taken off the policy; only a limit can be deleted.
	Deleted bool `json:"deleted,omitempty"`
	// UpdatedAt is when the row was last written; zero for an edit not read from the table.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// LimitEdit puts l, replacing the limit with its id.
func LimitEdit(l Limit) Edit { return edit(EditLimit, l.ID, l) }

// RouteEdit puts r, replacing the route with its id.
func RouteEdit(r Route) Edit { return edit(EditRoute, r.ID, r) }

// ServiceEdit puts s, replacing the service with its name.
func ServiceEdit(s Service) Edit { return edit(EditService, s.Name, s) }

// PatchEdit sets the fields of patch, a JSON object, over the element of kind and id that
// the policy file has. Layered over an edit of the same element, it is merged with it first:
// see Live.Merge.
func PatchEdit(kind EditKind, id string, patch json.RawMessage) Edit {
	return Edit{Kind: kind, ID: id, Value: patch, Patch: true}
}

// LimitDeletion takes the limit id off the policy. It stays off, whatever the policy file
// says of it, until the edit is dropped or a LimitEdit puts the limit again.
func LimitDeletion(id string) Edit { return Edit{Kind: EditLimit, ID: id, Deleted: true} }

func edit(kind EditKind, id string, v any) Edit {
	b, _ := json.Marshal(v) // plain data: never fails
	return Edit{Kind: kind, ID: id, Value: b}
}

// decode reads data, e's element as JSON, into v, whose own id field is id: it takes e's ID
// when empty and must not name another element. Unknown fields are ignored, so a row written
// by a newer gateway still applies on an older one during a rollout.
func (e Edit) decode(data []byte, v any, id *string) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s %q: %w", e.Kind, e.ID, err)
	}
	if *id == "" {
		*id = e.ID
	}
	if *id != e.ID {
		return fieldErr("id", "%q differs from the edit's %q", *id, e.ID)
	}
	return nil
}
