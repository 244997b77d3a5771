package admin

import (
	"net/http"
	"strings"
	"testing"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// TestAdminRefusesBadText sends path ids holding a NUL byte or invalid UTF-8: PostgreSQL's
// text type refuses them as an internal error, so the admin API answers 400 naming the path
// before a handler stores them, on both engines alike.
func TestAdminRefusesBadText(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		f := newFixtureOn(t, db)
		for _, c := range []struct{ method, path, body string }{
			{"PUT", "/admin/tenant-limits/ten%00a/holds", `{"capacity":5,"refill_per_second":1}`},
			{"DELETE", "/admin/tenant-limits/ten%FFa/holds", ""},
			{"DELETE", "/admin/edits/limit/id%00", ""},
			{"GET", "/admin/limits/a%FF", ""},
		} {
			code, body := f.do(t, c.method, c.path, "s3cret", c.body)
			if code != http.StatusBadRequest || !strings.Contains(body, `"field":"path"`) {
				t.Errorf("%s %s = %d %s, want 400 naming the path", c.method, c.path, code, body)
			}
		}
		if code, body := f.do(t, "GET", "/admin/tenant-limits", "s3cret", ""); code != http.StatusOK || strings.Contains(body, `"tenant":`) {
			t.Errorf("GET /admin/tenant-limits = %d %s, want 200 with nothing stored", code, body)
		}
	})
}
