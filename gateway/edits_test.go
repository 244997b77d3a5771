package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestAdminEditsReachEveryReplica runs two replicas on one database (a SQLite file in a
// shared DATA_DIR, then a PostgreSQL database), one Redis and one NATS: an edit made through
// replica A's admin API is enforced by replica B without a restart, outlives a restart of A,
// and DELETE /admin/edits on B takes it off A too.
//
// The edit turns shadow-per-ip (1/1m) from shadow to enforce: in shadow it never denies, so
// a 429 on /v1/shadowed is the edit and nothing else.
func TestAdminEditsReachEveryReplica(t *testing.T) {
	testkit.ForEachDatabaseURL(t, "gateway", testAdminEditsReachEveryReplica)
}

func testAdminEditsReachEveryReplica(t *testing.T, databaseURL string) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	ns := testkit.StartNATS(t)
	env := map[string]string{"REDIS_URL": rd.URL(), "NATS_URL": ns.ClientURL(), "DATA_DIR": t.TempDir(),
		"DATABASE_URL": databaseURL,
		// An hour: what replica B learns within seconds came by the NATS event.
		"RATE_LIMIT_RULE_REFRESH": "1h"}
	shadowed := func(p *process) int { return p.call(t, "GET", "/v1/shadowed", "").status }
	b := startGateway(t, testPolicy, be, env)
	for i := range 3 {
		if got := shadowed(b); got != http.StatusOK {
			t.Fatalf("B: GET /v1/shadowed #%d = %d, want 200: the file's limit is in shadow", i+1, got)
		}
	}

	t.Run("an edit on A is enforced by B", func(t *testing.T) {
		a := startGateway(t, testPolicy, be, env)
		if code, body := a.adminCall(t, "PATCH", "/admin/limits/shadow-per-ip", `{"mode":"enforce"}`); code != http.StatusOK || !strings.Contains(body, `"mode":"enforce"`) {
			t.Fatalf("A: PATCH shadow-per-ip to enforce = %d %s, want 200 with the limit enforced", code, body)
		}
		testkit.Eventually(t, 5*time.Second, "replica B denies on the limit edited on A", func() bool { return shadowed(b) == http.StatusTooManyRequests })
	})

	// A stopped when the subtest above ended; it starts again on the same database.
	t.Run("A restarted keeps the edit; DELETE /admin/edits on B takes it off A", func(t *testing.T) {
		a := startGateway(t, testPolicy, be, env)
		if code, body := a.adminCall(t, "GET", "/admin/limits/shadow-per-ip", ""); code != http.StatusOK || !strings.Contains(body, `"mode":"enforce"`) {
			t.Errorf("A after a restart: GET shadow-per-ip = %d %s, want it enforced from the start", code, body)
		}
		// One token a minute, spent by B already: A denies at the latest on its second call.
		if codes := []int{shadowed(a), shadowed(a)}; codes[1] != http.StatusTooManyRequests {
			t.Errorf("A after a restart: GET /v1/shadowed twice = %v, want the second denied", codes)
		}
		if code, body := b.adminCall(t, "GET", "/admin/edits", ""); code != http.StatusOK || !strings.Contains(body, `"kind":"limit","id":"shadow-per-ip"`) {
			t.Errorf("B: GET /admin/edits = %d %s, want the stored edit", code, body)
		}

		if code, body := b.adminCall(t, "DELETE", "/admin/edits", ""); code != http.StatusNoContent {
			t.Fatalf("B: DELETE /admin/edits = %d %s, want 204", code, body)
		}
		if got := shadowed(b); got != http.StatusOK {
			t.Errorf("B after DELETE /admin/edits: GET /v1/shadowed = %d, want 200 at once", got)
		}
		testkit.Eventually(t, 5*time.Second, "replica A back to the file's shadow limit", func() bool { return shadowed(a) == http.StatusOK })
		if code, body := a.adminCall(t, "GET", "/admin/edits", ""); code != http.StatusOK || body != "{\"edits\":[]}\n" {
			t.Errorf("A: GET /admin/edits = %d %s, want none", code, body)
		}
	})
}

// TestAdminEditsReachReplicasWithoutNATS shows the refresh alone carrying an edit to the
// other replica when there is no NATS to announce it.
func TestAdminEditsReachReplicasWithoutNATS(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	env := map[string]string{"REDIS_URL": rd.URL(), "DATA_DIR": t.TempDir(), "RATE_LIMIT_RULE_REFRESH": "200ms"}
	a, b := startGateway(t, testPolicy, be, env), startGateway(t, testPolicy, be, env)
	if code, body := a.adminCall(t, "PATCH", "/admin/limits/search-per-ip", `{"rate":"40/1m","burst":40}`); code != http.StatusOK {
		t.Fatalf("A: PATCH search-per-ip = %d %s, want 200", code, body)
	}
	testkit.Eventually(t, 5*time.Second, "replica B applies the edit at its next refresh", func() bool {
		return b.call(t, "GET", "/v1/search", "").header.Get("X-RateLimit-Limit") == "40"
	})
}
