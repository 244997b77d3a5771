package admin

import (
	"strings"
	"testing"
)

// TestDeletedLimitStaysDeleted: after DELETE /admin/limits/{id}, a route edit naming the
// limit is refused with the field named, where it used to be accepted and the limit dropped
// from it; the deletion holds over a file that defines the limit again, and GET says how to
// undo it; dropping the deletion brings the file's limit back, on its route.
func TestDeletedLimitStaysDeleted(t *testing.T) {
	f := newFixture(t)
	route := `{"match":{"method":"POST","path":"/v1/events/{id}/holds"},"service":"svc","auth":"user","limits":["holds-per-account"]}`
	step := func(t *testing.T, name, method, path, body string, wantCode int, wantIn string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Helper()
			if code, got := f.do(t, method, path, "s3cret", body); code != wantCode || !strings.Contains(got, wantIn) {
				t.Errorf("%s %s %s = %d %s, want %d containing %s", method, path, body, code, got, wantCode, wantIn)
			}
		})
	}
	step(t, "delete the limit", "DELETE", "/admin/limits/holds-per-account", "", 204, "")
	step(t, "put a route naming it", "PUT", "/admin/routes/holds", route, 400, `"field":"routes[holds].limits[0]"`)
	step(t, "patch a route to name it", "PATCH", "/admin/routes/holds", `{"limits":["holds-per-account"]}`, 400, `"field":"routes[holds].limits[0]"`)
	step(t, "patch another field of its route", "PATCH", "/admin/routes/holds", `{"response_timeout":"2s"}`, 200, `"limits":[]`)
	step(t, "get it", "GET", "/admin/limits/holds-per-account", "", 404, "DELETE /admin/edits/limit/holds-per-account")

	if err := f.live.ReplaceFileData([]byte(strings.Replace(doc, "rate: 5/1m", "rate: 7/1m", 1))); err != nil {
		t.Fatal(err)
	}
	step(t, "a file that defines it again", "GET", "/admin/limits/holds-per-account", "", 404, "deleted")
	step(t, "drop the deletion", "DELETE", "/admin/edits/limit/holds-per-account", "", 204, "")
	step(t, "the file's limit is back", "GET", "/admin/limits/holds-per-account", "", 200, `"rate":"7/1m"`)
	step(t, "on its route", "GET", "/admin/routes/holds", "", 200, `"limits":["holds-per-account"]`)
	step(t, "a route may name it again", "PUT", "/admin/routes/holds", route, 200, `"limits":["holds-per-account"]`)
}
