package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/gateway/ratelimit"
)

// TestLimitGlobalThroughTheAdminAPI puts a global limit, reads it back, refuses a bad mode
// and bad shares naming the field, patches the split, and finds each change in the audit
// trail with the global before and after.
func TestLimitGlobalThroughTheAdminAPI(t *testing.T) {
	f := newFixture(t)
	const path = "/admin/limits/holds-per-account"
	put := `{"key":"global","rate":"10/1m","global":{"mode":"static","shares":{"eu":70,"us":30}}}`
	if code, body := f.do(t, "PUT", path, "s3cret", put); code != http.StatusOK || !strings.Contains(body, `"global":{"mode":"static","shares":{"eu":70,"us":30}}`) {
		t.Fatalf("PUT %s = %d %s, want 200 with the global split", put, code, body)
	}
	if _, body := f.do(t, "GET", path, "s3cret", ""); !strings.Contains(body, `"global":{"mode":"static","shares":{"eu":70,"us":30}}`) {
		t.Errorf("GET %s = %s, want the global split", path, body)
	}
	for _, c := range []struct{ body, field string }{
		{`{"global":{"mode":"nearest"}}`, "global.mode"},
		{`{"global":{"mode":"static","shares":{"eu":70,"us":20}}}`, "global.shares"},
		{`{"global":{"mode":"static","shares":{"EU":70,"us":30}}}`, "global.shares"},
		{`{"global":{"mode":"approximate"}}`, "sync"},
	} {
		code, body := f.do(t, "PATCH", path, "s3cret", c.body)
		if code != http.StatusBadRequest || !strings.Contains(body, `"field":"`+c.field+`"`) {
			t.Errorf("PATCH %s = %d %s, want 400 naming %s", c.body, code, body, c.field)
		}
	}
	patch := `{"global":{"mode":"demand","shares":{"eu":50,"us":50}}}`
	if code, body := f.do(t, "PATCH", path, "s3cret", patch); code != http.StatusOK || !strings.Contains(body, `"global":{"mode":"demand","shares":{"eu":50,"us":50}}`) {
		t.Fatalf("PATCH %s = %d %s, want 200 with the demand split", patch, code, body)
	}
	if g := f.live.Current().Limit("holds-per-account").Rule.Global; g == nil || g.Mode != ratelimit.GlobalDemand || g.Shares["us"] != 50 {
		t.Errorf("running rule's global = %+v, want demand, us 50", g)
	}

	page, err := f.table.ListChanges(context.Background(), policystore.ChangeQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var befores, afters []string
	for _, c := range page.Changes {
		befores, afters = append(befores, string(c.Before)), append(afters, string(c.After))
	}
	trail := strings.Join(afters, "\n")
	if len(page.Changes) != 2 || !strings.Contains(trail, `"mode":"static"`) || !strings.Contains(trail, `"mode":"demand"`) ||
		!strings.Contains(strings.Join(befores, "\n"), `"mode":"static"`) {
		t.Errorf("audit trail befores %q, afters %q; want the put (static after) and the patch (static before, demand after)", befores, afters)
	}
}
