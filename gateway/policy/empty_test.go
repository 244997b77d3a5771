package policy

import (
	"errors"
	"testing"
)

// A policy without routes answers 404 to everything: an empty file, a comment-only file and
// an admin edit that removes the last route must all be refused.
func TestPolicyWithoutRoutesIsRefused(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		{"empty file", ""},
		{"comment only", "# the policy is being rewritten\n"},
		{"document marker only", "---\n"},
		{"services but no routes", "services:\n  - {name: inventory, instances: [\"http://127.0.0.1:8104\"]}\n"},
		{"empty route list", "services:\n  - {name: inventory, instances: [\"http://127.0.0.1:8104\"]}\nroutes: []\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Parse(%q) = %v, want a policy for Compile to judge", tt.doc, err)
			}
			_, err = Compile(p, nil)
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "routes" {
				t.Errorf("Compile(%q) = %v, want an error naming routes", tt.doc, err)
			}
		})
	}
}

func TestLiveKeepsRunningPolicyOverFileWithoutRoutes(t *testing.T) {
	l := newLive(t, base)
	before := l.Current()
	for _, doc := range []string{"", "# nothing yet\n"} {
		err := l.ReplaceFileData([]byte(doc))
		if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "routes" {
			t.Errorf("ReplaceFileData(%q) = %v, want an error naming routes", doc, err)
		}
		if l.Current() != before {
			t.Errorf("ReplaceFileData(%q) replaced the running policy", doc)
		}
	}
}
