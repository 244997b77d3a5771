package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/testkit"
)

// TestEveryPolicyChangeIsAudited makes every kind of policy change on two replicas of one
// database, one NATS and one Redis, and reads GET /admin/audit: each change once, by whom,
// on which replica, with the element before and after; a refused edit not at all; an edit
// made on A and followed by B once, by A.
func TestEveryPolicyChangeIsAudited(t *testing.T) {
	testkit.ForEachDatabaseURL(t, "gateway", testEveryPolicyChangeIsAudited)
}

func testEveryPolicyChangeIsAudited(t *testing.T, databaseURL string) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	ns := testkit.StartNATS(t)
	env := map[string]string{"REDIS_URL": rd.URL(), "NATS_URL": ns.ClientURL(), "DATABASE_URL": databaseURL,
		"RATE_LIMIT_RULE_REFRESH": "1h"}
	if databaseURL == "" { // SQLite: one file in a DATA_DIR both replicas share
		env["DATA_DIR"] = t.TempDir()
	}
	as := func(replica string) map[string]string {
		e := maps.Clone(env)
		e["GATEWAY_REPLICA_ID"] = replica
		return e
	}
	a, b := startGateway(t, testPolicy, be, as("gw-a")), startGateway(t, testPolicy, be, as("gw-b"))
	call := func(p *process, method, path, body string, want int, header ...string) {
		t.Helper()
		res := do(t, method, p.admin+path, body, append([]string{"Authorization", "Bearer " + adminToken}, header...)...)
		if res.status != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, res.status, res.body, want)
		}
	}

	call(a, "PUT", "/admin/limits/search-per-ip", `{"key":"ip","rate":"50/1m","burst":50}`, http.StatusOK)
	call(a, "PATCH", "/admin/limits/search-per-ip", `{"mode":"shadow"}`, http.StatusOK, "Admin-Actor", "playground/r1")
	call(a, "PATCH", "/admin/routes/search", `{"response_timeout":"2s"}`, http.StatusOK)
	call(a, "PATCH", "/admin/services/echo", `{"max_in_flight":5}`, http.StatusOK)
	call(a, "PUT", "/admin/tenant-limits/ten_a/search", `{"capacity":5,"refill_per_second":1}`, http.StatusOK)
	call(a, "DELETE", "/admin/limits/shadow-per-ip", "", http.StatusNoContent)
	call(a, "DELETE", "/admin/edits/limit/shadow-per-ip", "", http.StatusNoContent)
	// Refused: neither applied nor recorded.
	call(a, "PATCH", "/admin/services/echo", `{"max_in_flight":-1}`, http.StatusBadRequest)
	call(a, "PUT", "/admin/tenant-limits/ten_a/nowhere", `{"capacity":5,"refill_per_second":1}`, http.StatusBadRequest)
	call(a, "PATCH", "/admin/limits/twenty", `{"mode":"loud"}`, http.StatusBadRequest)
	call(a, "PATCH", "/admin/limits/twenty", `{"mode":"shadow"}`, http.StatusBadRequest, "Admin-Actor", "play ground")
	// Nothing to drop: no change.
	call(a, "DELETE", "/admin/edits/route/holds", "", http.StatusNoContent)
	call(a, "DELETE", "/admin/tenant-limits/ten_b/*", "", http.StatusNoContent)

	// B follows A's edits through NATS and the table, and records none of them.
	testkit.Eventually(t, 5*time.Second, "replica B runs the limit edited on A", func() bool {
		_, body := b.adminCall(t, "GET", "/admin/limits/search-per-ip", "")
		return strings.Contains(body, `"mode":"shadow"`)
	})

	// Each replica reads its own file: A's reload is A's.
	a.editPolicy(t, "{id: twenty, key: route, rate: 20/1h, burst: 20}", "{id: twenty, key: route, rate: 30/1h, burst: 30}")
	testkit.Eventually(t, 5*time.Second, "A reloads its file", func() bool {
		_, body := a.adminCall(t, "GET", "/admin/limits/twenty", "")
		return strings.Contains(body, `"rate":"30/1h"`)
	})
	testkit.Eventually(t, 5*time.Second, "A records its reload", func() bool {
		return len(audit(t, b, "kind=file-reload").Changes) == 1
	})
	call(b, "DELETE", "/admin/edits", "", http.StatusNoContent)

	got := audit(t, a, "")
	type row struct{ kind, id, action, actor, replica string }
	want := []row{
		{"reset", "*", "reset", "admin", "gw-b"},
		{"file-reload", a.policyFile, "reload", "file:" + a.policyFile, "gw-a"},
		{"limit", "shadow-per-ip", "drop-edit", "admin", "gw-a"},
		{"limit", "shadow-per-ip", "delete", "admin", "gw-a"},
		{"tenant-limit", "ten_a/search", "put", "admin", "gw-a"},
		{"service", "echo", "patch", "admin", "gw-a"},
		{"route", "search", "patch", "admin", "gw-a"},
		{"limit", "search-per-ip", "patch", "admin:playground/r1", "gw-a"},
		{"limit", "search-per-ip", "put", "admin", "gw-a"},
	}
	var rows []row
	for _, c := range got.Changes {
		rows = append(rows, row{string(c.Kind), c.ID, c.Action, c.Actor, c.Replica})
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("GET /admin/audit =\n%v\nwant, newest first, each change once:\n%v", rows, want)
	}

	field := func(raw json.RawMessage, name string) any {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return m[name]
	}
	byAction := func(kind, action string) policy.Change {
		for _, c := range got.Changes {
			if string(c.Kind) == kind && c.Action == action {
				return c
			}
		}
		return policy.Change{}
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"limit put: rate before, after", [2]any{field(byAction("limit", "put").Before, "rate"), field(byAction("limit", "put").After, "rate")}, [2]any{"3/1m", "50/1m"}},
		{"limit patch: mode before, after", [2]any{field(byAction("limit", "patch").Before, "mode"), field(byAction("limit", "patch").After, "mode")}, [2]any{"enforce", "shadow"}},
		{"route patch: timeout after", field(byAction("route", "patch").After, "response_timeout"), "2s"},
		{"service patch: max_in_flight before, after", [2]any{field(byAction("service", "patch").Before, "max_in_flight"), field(byAction("service", "patch").After, "max_in_flight")}, [2]any{0.0, 5.0}},
		{"tenant put: before, capacity after", [2]any{string(byAction("tenant-limit", "put").Before), field(byAction("tenant-limit", "put").After, "capacity")}, [2]any{"null", 5.0}},
		{"limit delete: after", string(byAction("limit", "delete").After), "null"},
		{"drop-edit: before, rate after", [2]any{string(byAction("limit", "drop-edit").Before), field(byAction("limit", "drop-edit").After, "rate")}, [2]any{"null", "1/1m"}},
		{"reset: edits before", strings.Count(string(byAction("reset", "reset").Before), `"kind"`), 3},
		{"file reload: policies before, after", [2]bool{strings.Contains(string(byAction("file-reload", "reload").Before), `"rate":"20/1h"`), strings.Contains(string(byAction("file-reload", "reload").After), `"rate":"30/1h"`)}, [2]bool{true, true}},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// Filters an operator reaches for, and a page at a time.
	if got := audit(t, b, "kind=limit&id=search-per-ip"); len(got.Changes) != 2 || got.Changes[0].Action != "patch" {
		t.Errorf("?kind=limit&id=search-per-ip = %+v, want the patch then the put", got.Changes)
	}
	if got := audit(t, b, "actor=admin:playground"); len(got.Changes) != 1 || got.Changes[0].Actor != "admin:playground/r1" {
		t.Errorf("?actor=admin:playground = %+v, want the playground's one edit", got.Changes)
	}
	first := audit(t, b, "limit=4")
	rest := audit(t, b, "limit=10&cursor="+url.QueryEscape(first.Next))
	if len(first.Changes) != 4 || first.Next == "" || len(rest.Changes) != len(want)-4 || rest.Changes[0].ChangeID != got.Changes[4].ChangeID {
		t.Errorf("pages of 4 then 10 = %d (next %q) then %d, want 4 then %d following on", len(first.Changes), first.Next, len(rest.Changes), len(want)-4)
	}
	for param, query := range map[string]string{"kindd": "kindd=limit", "kind": "kind=limits", "limit": "limit=0", "cursor": "cursor=x"} {
		res := do(t, "GET", a.admin+"/admin/audit?"+query, "", "Authorization", "Bearer "+adminToken)
		if res.status != http.StatusBadRequest || !strings.HasPrefix(res.header.Get("Content-Type"), "application/problem+json") || !strings.Contains(string(res.body), param) {
			t.Errorf("GET /admin/audit?%s = %d %s, want 400 problem+json naming %s", query, res.status, res.body, param)
		}
	}
}

// TestFileReloadWithDatabaseDown shows a reload of the policy file put in force while the
// policy database does not answer: the trail cannot hold it, and says so in the log, but the
// file is how an operator mends things when the database is the trouble.
func TestFileReloadWithDatabaseDown(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	dead := fmt.Sprintf("postgres://postgres:postgres@127.0.0.1:%d/gateway?sslmode=disable", testkit.FreePort(t))
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "DATABASE_URL": dead, "RATE_LIMIT_RULE_REFRESH": "100ms"})
	gw.editPolicy(t, "{id: search-per-ip, key: ip, rate: 3/1m, burst: 3}", "{id: search-per-ip, key: ip, rate: 50/1m, burst: 50}")
	testkit.Eventually(t, 5*time.Second, "the edited file's limit applies with the database down", func() bool {
		return gw.call(t, "GET", "/v1/search", "").header.Get("X-RateLimit-Limit") == "50"
	})
	testkit.Eventually(t, 5*time.Second, "the lost record is logged", func() bool {
		return strings.Contains(gw.logs.String(), "not recorded in the audit trail")
	})
	res := do(t, "GET", gw.admin+"/admin/audit", "", "Authorization", "Bearer "+adminToken)
	if res.status != http.StatusServiceUnavailable {
		t.Errorf("GET /admin/audit with the database down = %d %s, want 503", res.status, res.body)
	}
}

// editPolicy saves p's policy file with old replaced by new, which it must hold.
func (p *process) editPolicy(t *testing.T, old, new string) {
	t.Helper()
	doc, err := os.ReadFile(p.policyFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), old) {
		t.Fatalf("the policy file lacks %q", old)
	}
	if err := os.WriteFile(p.policyFile, []byte(strings.Replace(string(doc), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// audit reads GET /admin/audit?query from p.
func audit(t *testing.T, p *process, query string) (page struct {
	Changes []policy.Change `json:"changes"`
	Next    string          `json:"next_cursor"`
}) {
	t.Helper()
	code, body := p.adminCall(t, "GET", "/admin/audit?"+query, "")
	if code != http.StatusOK {
		t.Fatalf("GET /admin/audit?%s = %d %s, want 200", query, code, body)
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	return page
}
