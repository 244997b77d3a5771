package policy

import (
	"errors"
	"strings"
	"testing"
)

// reservedIDs are limit ids that start like the rules a policy makes for its plans and
// tenant overrides; a limit named so would share a rule id with them.
var reservedIDs = []string{"plan-free-api", "plan-partner-quota", "plan-x", "tenant-api", "tenant-api.holds", "tenant-apis"}

func TestCompileRefusesReservedLimitIDs(t *testing.T) {
	for _, id := range reservedIDs {
		t.Run(id, func(t *testing.T) {
			doc := strings.ReplaceAll(base, "holds-per-account", id)
			p, err := Parse([]byte(doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			_, err = Compile(p, nil)
			want := "limits[" + id + "].id"
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != want {
				t.Errorf("Compile(limit %s) = %v, want an error naming %s", id, err, want)
			}
		})
	}
	// Ids that merely look alike are anyone's.
	for _, id := range []string{"tenant-writes", "planner", "api-plan-free", "partner-api"} {
		t.Run(id, func(t *testing.T) {
			s := mustCompile(t, strings.ReplaceAll(base, "holds-per-account", id))
			if s.Limit(id) == nil {
				t.Errorf("Compile(limit %s): no such limit in the snapshot", id)
			}
		})
	}
}

// TestAdminEditRefusesReservedLimitIDs goes the way PUT /admin/limits/{id} does: Check,
// then Apply. Both refuse, naming the bare field, and the running policy keeps its limits.
func TestAdminEditRefusesReservedLimitIDs(t *testing.T) {
	l := newLive(t, base)
	before := l.Current()
	for _, id := range reservedIDs {
		t.Run(id, func(t *testing.T) {
			e := LimitEdit(Limit{ID: id, Key: "tenant", Rate: "100/1m"})
			for name, do := range map[string]func(Edit) error{"Check": l.Check, "Apply": l.Apply} {
				err := do(e)
				if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "id" {
					t.Errorf("%s(limit %s) = %v, want an error naming id", name, id, err)
				}
			}
			if l.Current() != before || l.Current().Limit(id) != nil {
				t.Errorf("after refused edits of %s, the running policy changed", id)
			}
		})
	}
}
