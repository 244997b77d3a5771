package admin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// TestPatchLeavesTheOtherFieldsToTheFile: a PATCH is kept as the fields it sent, merged with
// the PATCHes before it, so that a later change of the file to the other fields applies, on
// this replica and on one that reads the table; a PATCH of a limit a PUT defined patches it.
func TestPatchLeavesTheOtherFieldsToTheFile(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		f := newFixtureOn(t, db)
		for _, st := range []struct{ method, path, body string }{
			{"PATCH", "/admin/limits/holds-per-account", `{"mode":"shadow"}`},
			{"PATCH", "/admin/limits/holds-per-account", `{"burst":9}`},
			{"PUT", "/admin/limits/per-ip", `{"key":"ip","rate":"10/s"}`},
			{"PATCH", "/admin/limits/per-ip", `{"mode":"shadow"}`},
		} {
			if code, body := f.do(t, st.method, st.path, "s3cret", st.body); code != 200 {
				t.Fatalf("%s %s %s = %d %s, want 200", st.method, st.path, st.body, code, body)
			}
		}

		_, body := f.do(t, "GET", "/admin/edits", "s3cret", "")
		var stored struct{ Edits []policy.Edit }
		if err := json.Unmarshal([]byte(body), &stored); err != nil || len(stored.Edits) != 2 {
			t.Fatalf("GET /admin/edits = %s (%v), want two edits", body, err)
		}
		if e := stored.Edits[0]; e.ID != "holds-per-account" || !e.Patch || string(e.Value) != `{"burst":9,"mode":"shadow"}` {
			t.Errorf("stored edit of holds-per-account = %+v (%s), want the patch {burst 9, mode shadow}", e, e.Value)
		}
		var perIP policy.Limit
		if e := stored.Edits[1]; e.ID != "per-ip" || e.Patch || json.Unmarshal(e.Value, &perIP) != nil || perIP.Rate != "10/s" || perIP.Mode != "shadow" {
			t.Errorf("stored edit of per-ip = %+v (%s), want the PUT's limit, whole, in shadow", e, e.Value)
		}

		file := strings.Replace(doc, "rate: 5/1m, burst: 5", "rate: 50/1m, burst: 50", 1)
		if err := f.live.ReplaceFileData([]byte(file)); err != nil {
			t.Fatalf("ReplaceFileData(rate 50/1m) = %v", err)
		}
		var got policy.Limit
		_, body = f.do(t, "GET", "/admin/limits/holds-per-account", "s3cret", "")
		if err := json.Unmarshal([]byte(body), &got); err != nil || got.Rate != "50/1m" || got.Burst != 9 || got.Mode != "shadow" {
			t.Errorf("after the file's rate changed, GET holds-per-account = %s, want the file's 50/1m, the patches' burst 9 and shadow", body)
		}

		other := newLive(t, file)
		if err := f.table.Reload(context.Background(), other); err != nil {
			t.Fatal(err)
		}
		s := other.Current()
		if l := s.Limit("holds-per-account").Limit; l.Rate != "50/1m" || l.Burst != 9 || l.Mode != "shadow" {
			t.Errorf("another replica on the new file: holds-per-account = %+v, want 50/1m, burst 9, shadow", l)
		}
		if l := s.Limit("per-ip"); l == nil || l.Limit.Rate != "10/s" || l.Limit.Mode != "shadow" {
			t.Errorf("another replica: per-ip = %+v, want 10/s in shadow", l)
		}
	})
}

// TestPatchBodyIsAnObject: a PATCH body other than an object of fields is refused.
func TestPatchBodyIsAnObject(t *testing.T) {
	f := newFixture(t)
	for _, body := range []string{`null`, ` null `} {
		if code, got := f.do(t, "PATCH", "/admin/limits/holds-per-account", "s3cret", body); code != 400 || !strings.Contains(got, "JSON object") {
			t.Errorf("PATCH with body %q = %d %s, want 400 asking for a JSON object", body, code, got)
		}
	}
}
