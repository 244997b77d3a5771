package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/ratelimit"
)

func newLive(t *testing.T, doc string) *Live {
	t.Helper()
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLiveAdminEditsSurviveFileReload(t *testing.T) {
	l := newLive(t, base)
	var swaps int
	l.OnChange(func(*Snapshot) error { swaps++; return nil })

	if err := l.Apply(LimitEdit(Limit{ID: "holds-per-account", Key: "user", Rate: "2/1m", Mode: "shadow"})); err != nil {
		t.Fatalf("Apply(limit): %v", err)
	}
	if got := l.Current().Limit("holds-per-account").Rule; got.Limit != 2 || got.Mode != ratelimit.Shadow {
		t.Errorf("after Apply(limit), rule = %+v, want 2/1m in shadow", got)
	}
	// The file changes something else; the admin edit stays on top.
	if err := l.ReplaceFileData([]byte(strings.Replace(base, "rate: 10/1m", "rate: 20/1m", 1))); err != nil {
		t.Fatalf("ReplaceFileData: %v", err)
	}
	s := l.Current()
	if s.Limit("holds-per-account").Rule.Limit != 2 || s.Limit("login-per-ip").Rule.Limit != 20 {
		t.Errorf("after file reload, holds %d login %d, want 2 (admin) and 20 (file)", s.Limit("holds-per-account").Rule.Limit, s.Limit("login-per-ip").Rule.Limit)
	}
	// Deleting a limit takes it off the routes that listed it.
	if err := l.Apply(LimitDeletion("login-per-ip")); err != nil {
		t.Fatalf("Apply(LimitDeletion) = %v, want nil", err)
	}
	if s := l.Current(); s.Limit("login-per-ip") != nil || len(s.Route("login").Limits) != 0 {
		t.Errorf("after Apply(LimitDeletion), limit %v, route limits %v; want both gone", s.Limit("login-per-ip"), s.Route("login").Limits)
	}
	if swaps != 3 {
		t.Errorf("OnChange ran %d times, want 3", swaps)
	}
}

func TestLiveRejectsBadChanges(t *testing.T) {
	l := newLive(t, base)
	before := l.Current()
	tests := []struct {
		name   string
		change func() error
		field  string
	}{
		{"limit with a bad rate", func() error { return l.Apply(LimitEdit(Limit{ID: "x", Key: "ip", Rate: "lots"})) }, "rate"},
		{"route to no service", func() error {
			return l.Apply(RouteEdit(Route{ID: "r", Match: Match{Path: "/r"}, Service: "nope", Auth: AuthNone}))
		}, "routes[r].service"},
		{"file that does not validate", func() error { return l.ReplaceFileData([]byte(strings.Replace(base, "auth: user", "auth: maybe", 1))) }, "routes[holds].auth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.change()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("change = %v, want an error naming %s", err, tt.field)
			}
			if l.Current() != before {
				t.Errorf("the running snapshot changed after a rejected change")
			}
			if l.Rejected() == nil {
				t.Errorf("Rejected() = nil, want the error")
			}
		})
	}
	// A hook can veto a change.
	l.OnChange(func(s *Snapshot) error {
		if slices.ContainsFunc(s.Policy.Services, func(sv Service) bool { return sv.Name == "b" }) {
			return errors.New("no service b here")
		}
		return nil
	})
	for _, name := range []string{"a", "b"} {
		err := l.Apply(ServiceEdit(Service{Name: name, Instances: []string{"http://127.0.0.1:9"}}))
		if (err == nil) != (name == "a") {
			t.Errorf("Apply(service %s) = %v, want a accepted and b vetoed", name, err)
		}
	}
	// A rejected admin edit leaves nothing behind: a later good change does not bring it in.
	if err := l.Apply(ServiceEdit(Service{Name: "extra", Instances: []string{"http://127.0.0.1:9"}})); err != nil {
		t.Fatalf("Apply(service): %v", err)
	}
	if l.Current().Route("r") != nil || l.Current().Limit("x") != nil {
		t.Errorf("a rejected edit came back with a later change")
	}
}
