package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"boxoffice.dev/gateway/ratelimit"
)

func patchOf(kind EditKind, id, patch string) Edit {
	return PatchEdit(kind, id, json.RawMessage(patch))
}

// TestMerge shows the row each admin edit makes over the edit held for its element.
func TestMerge(t *testing.T) {
	shadow := patchOf(EditLimit, "holds-per-account", `{"mode":"shadow","burst":3}`)
	put := LimitEdit(Limit{ID: "holds-per-account", Key: "user", Rate: "2/1m"})
	tests := []struct {
		name string
		held []Edit
		e    Edit
		// want is the row as JSON; "" when Merge refuses e.
		want string
	}{
		{"patch over nothing", nil, shadow,
			`{"kind":"limit","id":"holds-per-account","value":{"burst":3,"mode":"shadow"},"patch":true}`},
		{"patch over a patch: the later fields win, a null is kept", []Edit{shadow}, patchOf(EditLimit, "holds-per-account", `{"burst":7,"cost":null}`),
			`{"kind":"limit","id":"holds-per-account","value":{"burst":7,"cost":null,"mode":"shadow"},"patch":true}`},
		{"patch over a patch merges objects", []Edit{patchOf(EditService, "auth", `{"retry_budget":{"ratio":0.1}}`)},
			patchOf(EditService, "auth", `{"retry_budget":{"window":"5s"}}`),
			`{"kind":"service","id":"auth","value":{"retry_budget":{"ratio":0.1,"window":"5s"}},"patch":true}`},
		{"patch over a whole element: whole still", []Edit{put}, patchOf(EditLimit, "holds-per-account", `{"mode":"shadow"}`),
			`{"kind":"limit","id":"holds-per-account","value":{"id":"holds-per-account","key":"user","algorithm":"","rate":"2/1m","on_store_failure":"","mode":"shadow"}}`},
		{"a whole element replaces a patch", []Edit{shadow}, put,
			`{"kind":"limit","id":"holds-per-account","value":{"id":"holds-per-account","key":"user","algorithm":"","rate":"2/1m","on_store_failure":"","mode":""}}`},
		{"a route's merge leaves out the limits deleted", []Edit{
			RouteEdit(Route{ID: "login", Match: Match{Path: "/login"}, Service: "auth", Auth: AuthNone, Limits: []string{"holds-per-account", "login-per-ip"}}),
			LimitDeletion("login-per-ip"),
		}, patchOf(EditRoute, "login", `{"auth":"optional"}`),
			`{"kind":"route","id":"login","value":{"id":"login","match":{"method":"","path":"/login"},"service":"auth","auth":"optional","limits":["holds-per-account"]}}`},
		{"patch of a deleted limit", []Edit{LimitDeletion("holds-per-account")}, shadow, ""},
		{"patch that is not an object", nil, patchOf(EditLimit, "holds-per-account", `["shadow"]`), ""},
		{"patch of a field to the wrong type", nil, patchOf(EditLimit, "holds-per-account", `{"burst":"many"}`), ""},
		{"patch of another element's id", nil, patchOf(EditLimit, "holds-per-account", `{"id":"login-per-ip"}`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLive(t, base)
			for _, e := range tt.held {
				if err := l.Apply(e); err != nil {
					t.Fatal(err)
				}
			}
			got, err := l.Merge(tt.e)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("Merge(%s) = %s, want an error", tt.e.Value, jsonOf(t, got))
			case tt.want != "" && err != nil:
				t.Errorf("Merge(%s) = %v, want %s", tt.e.Value, err, tt.want)
			case tt.want != "" && jsonOf(t, got) != tt.want:
				t.Errorf("Merge(%s) = %s, want %s", tt.e.Value, jsonOf(t, got), tt.want)
			}
		})
	}
}

// TestPatchFollowsTheFile: a patch sets its fields over the file's element each time the
// policy is composed, so a file change to the fields it leaves alone applies.
func TestPatchFollowsTheFile(t *testing.T) {
	l := newLive(t, base)
	for _, e := range []Edit{
		patchOf(EditLimit, "holds-per-account", `{"mode":"shadow"}`),
		patchOf(EditRoute, "holds", `{"response_timeout":"2s"}`),
	} {
		if err := l.Apply(e); err != nil {
			t.Fatalf("Apply(%s) = %v", e.Value, err)
		}
	}
	file := strings.Replace(base, "rate: 5/1m, burst: 5", "rate: 50/1m, burst: 50", 1)
	file = strings.Replace(file, "limits: [holds-per-account]", "limits: [holds-per-account, login-per-ip]", 1)
	if err := l.ReplaceFileData([]byte(file)); err != nil {
		t.Fatalf("ReplaceFileData = %v", err)
	}
	s := l.Current()
	if got := s.Limit("holds-per-account").Rule; got.Limit != 50 || got.Mode != ratelimit.Shadow {
		t.Errorf("holds-per-account = %d in %s, want the file's 50 in the patch's shadow", got.Limit, got.Mode)
	}
	if r := s.Route("holds"); len(r.Limits) != 2 || r.ResponseTimeout.Seconds() != 2 {
		t.Errorf("route holds = %d limits, response timeout %v; want the file's 2 and the patch's 2s", len(r.Limits), r.ResponseTimeout)
	}
}

// TestPatchOfNothing: a patch of an element the file no longer has applies nothing and is
// reported, without holding the file back; it applies again once the file has the element.
func TestPatchOfNothing(t *testing.T) {
	l := newLive(t, base)
	if err := l.Apply(patchOf(EditLimit, "login-per-ip", `{"mode":"shadow"}`)); err != nil {
		t.Fatal(err)
	}
	without := strings.Replace(strings.Replace(base, "  - {id: login-per-ip, key: ip, algorithm: gcra, rate: 10/1m, on_store_failure: closed}\n", "", 1),
		"limits: [login-per-ip]", "limits: []", 1)
	if err := l.ReplaceFileData([]byte(without)); err != nil {
		t.Fatalf("ReplaceFileData(without the limit) = %v, want nil: the patch is left out", err)
	}
	if got := l.SkippedEdits(); len(got) != 1 || !strings.Contains(got[0], "policy_edit (limit, login-per-ip): the policy file has no such element") {
		t.Errorf("SkippedEdits() = %q, want the patch of login-per-ip named", got)
	}
	if l.Current().Limit("login-per-ip") != nil {
		t.Errorf("limit login-per-ip = %+v, want none: a patch of nothing defines nothing", l.Current().Limit("login-per-ip"))
	}
	if err := l.Check(patchOf(EditLimit, "login-per-ip", `{"burst":2}`)); err == nil {
		t.Errorf("Check(patch of a limit the file lacks) = nil, want an error")
	}
	if err := l.ReplaceFileData([]byte(base)); err != nil {
		t.Fatal(err)
	}
	if lim := l.Current().Limit("login-per-ip"); lim == nil || lim.Rule.Mode != ratelimit.Shadow || l.SkippedEdits() != nil {
		t.Errorf("after the file has it again, limit %+v, skipped %q; want it in shadow, none skipped", lim, l.SkippedEdits())
	}
}

// TestRouteNamingADeletedLimit: an admin edit of a route may not list a limit an edit
// deleted, where Apply would take it off the route silently; the deletion holds over a file
// that defines the limit, until the edit is dropped.
func TestRouteNamingADeletedLimit(t *testing.T) {
	l := newLive(t, base)
	if err := l.Apply(LimitDeletion("login-per-ip")); err != nil {
		t.Fatal(err)
	}
	login := Route{ID: "login", Match: Match{Method: "POST", Path: "/v1/auth/login"}, Service: "auth", Auth: AuthNone}
	tests := []struct {
		name  string
		edit  Edit
		field string // "" when the edit applies
	}{
		{"put naming it", RouteEdit(Route{ID: login.ID, Match: login.Match, Service: login.Service, Auth: login.Auth, Limits: []string{"holds-per-account", "login-per-ip"}}), "routes[login].limits[1]"},
		{"patch naming it", patchOf(EditRoute, "login", `{"limits":["login-per-ip"]}`), "routes[login].limits[0]"},
		{"patch of another field", patchOf(EditRoute, "login", `{"response_timeout":"2s"}`), ""},
		{"put without it", RouteEdit(login), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.Check(tt.edit)
			fe, _ := errors.AsType[*FieldError](err)
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Check(%s) = %v, want nil", tt.name, err)
			case tt.field != "" && (fe == nil || fe.Field != tt.field || !strings.Contains(fe.Problem, "deleted")):
				t.Errorf("Check(%s) = %v, want an error naming %s and the deletion", tt.name, err, tt.field)
			}
		})
	}

	redefined := strings.Replace(base, "rate: 10/1m", "rate: 20/1m", 1)
	if err := l.ReplaceFileData([]byte(redefined)); err != nil {
		t.Fatal(err)
	}
	if lim := l.Current().Limit("login-per-ip"); lim != nil {
		t.Errorf("after a file that defines login-per-ip again, limit = %+v, want it still deleted", lim)
	}
	if err := l.DropEdits(func(e Edit) bool { return e.ID == "login-per-ip" }); err != nil {
		t.Fatal(err)
	}
	if lim := l.Current().Limit("login-per-ip"); lim == nil || lim.Rule.Limit != 20 || len(l.Current().Route("login").Limits) != 1 {
		t.Errorf("after the deletion is dropped, limit %+v, want the file's 20/1m back on its route", lim)
	}
}
