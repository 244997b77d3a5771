package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
)

// TestAuditHoldsChangesMadeOnly shows the trail holding an edit this replica applied, and
// nothing of one it refused after storing it (the record goes with the row put back), of
// one the policy refused, or of one whose caller named itself in a way the trail cannot hold.
func TestAuditHoldsChangesMadeOnly(t *testing.T) {
	f := newFixture(t)
	f.live.OnChange(func(s *policy.Snapshot) error {
		if s.Policy.Services[0].MaxInFlight == 13 {
			return errors.New("upstream: 13 in flight refused")
		}
		return nil
	})
	trail := func() []policy.Change {
		t.Helper()
		page, err := f.table.ListChanges(context.Background(), policystore.ChangeQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return page.Changes
	}
	for _, c := range []struct{ body, actor string }{
		{`{"max_in_flight":13}`, ""},     // refused by this replica's hook, after the write
		{`{"max_in_flight":-1}`, ""},     // refused by the policy
		{`{"max_in_flight":7}`, "a b"},   // a name the trail cannot hold
		{`{"max_in_flight":7}`, "a\tb"},  // nor this
		{`{"max_in_flight":"7"}`, "ops"}, // not a number
	} {
		req, _ := http.NewRequest("PATCH", f.srv.URL+"/admin/services/svc", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("Content-Type", "application/json")
		if c.actor != "" {
			req.Header.Set(ActorHeader, c.actor)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Errorf("PATCH %s as %q = %d, want it refused", c.body, c.actor, resp.StatusCode)
		}
	}
	if got := trail(); len(got) != 0 {
		t.Fatalf("after refused edits, the trail = %s, want nothing", show(got))
	}

	if code, body := f.do(t, "PATCH", "/admin/services/svc", "s3cret", `{"max_in_flight":7}`); code != http.StatusOK {
		t.Fatalf("PATCH max_in_flight 7 = %d %s", code, body)
	}
	got := trail()
	if len(got) != 1 || got[0].Actor != "admin" || got[0].Replica != "gw-test" || got[0].Kind != policy.ChangeService || got[0].Action != policy.ActionPatch ||
		!strings.Contains(string(got[0].Before), `"max_in_flight":0`) || !strings.Contains(string(got[0].After), `"max_in_flight":7`) {
		t.Errorf("the trail = %s, want the one patch by admin on gw-test, max_in_flight 0 before and 7 after", show(got))
	}
	if code, body := f.do(t, "GET", "/admin/audit?kind=service&id=svc", "s3cret", ""); code != http.StatusOK || !strings.Contains(body, got[0].ChangeID) {
		t.Errorf("GET /admin/audit?kind=service&id=svc = %d %s, want the change", code, body)
	}
	if code, body := f.do(t, "GET", "/admin/audit?id=svc&id=other", "s3cret", ""); code != http.StatusBadRequest || !strings.Contains(body, "id") {
		t.Errorf("GET /admin/audit with id twice = %d %s, want 400 naming id", code, body)
	}
}

// show is changes as JSON, as GET /admin/audit answers them.
func show(changes []policy.Change) string {
	b, _ := json.Marshal(changes)
	return string(b)
}
