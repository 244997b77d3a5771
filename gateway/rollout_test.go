package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestGradualEnforcementByTheAdminAPI rolls a limit out through the admin API of replica A
// while replica B, on the same database and Redis, follows: at 30 % about a third of 200
// clients are denied their second request and the others are only counted as would-deny
// (ratelimit_decisions_total outcome unenforced_denied), the same clients on both
// replicas; at 100 % every client is denied. The key is a client header, one budget each.
func TestGradualEnforcementByTheAdminAPI(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	env := map[string]string{"REDIS_URL": rd.URL(), "DATA_DIR": t.TempDir(), "RATE_LIMIT_RULE_REFRESH": "200ms"}
	a, b := startGateway(t, testPolicy, be, env), startGateway(t, testPolicy, be, env)
	clients := make([]string, 200)
	for i := range clients {
		clients[i] = fmt.Sprintf("client-%d", i)
	}
	// denied sends one request per client to p and returns the clients refused.
	denied := func(p *process) []string {
		t.Helper()
		var out []string
		for _, c := range clients {
			switch res := p.call(t, "GET", "/v1/shadowed", "", "X-Client", c); res.status {
			case http.StatusOK:
			case http.StatusTooManyRequests:
				out = append(out, c)
			default:
				t.Fatalf("GET /v1/shadowed as %s = %d, want 200 or 429", c, res.status)
			}
		}
		return out
	}

	for _, bad := range []string{`{"enforce_percent":101}`, `{"enforce_percent":-5}`} {
		code, body := a.adminCall(t, "PATCH", "/admin/limits/shadow-per-ip", bad)
		if code != http.StatusBadRequest || !strings.Contains(body, "enforce_percent") || !strings.Contains(body, "want 0 to 100") {
			t.Errorf("PATCH %s = %d %s, want 400 naming enforce_percent and its range", bad, code, body)
		}
	}
	patch := `{"key":"header:X-Client","rate":"1/1h","mode":"enforce","enforce_percent":30}`
	if code, body := a.adminCall(t, "PATCH", "/admin/limits/shadow-per-ip", patch); code != http.StatusOK || !strings.Contains(body, `"enforce_percent":30`) {
		t.Fatalf("A: PATCH %s = %d %s, want 200 with the limit at 30 %%", patch, code, body)
	}
	testkit.Eventually(t, 5*time.Second, "replica B applies the edit at its next refresh", func() bool {
		_, body := b.adminCall(t, "GET", "/admin/limits/shadow-per-ip", "")
		return strings.Contains(body, `"enforce_percent":30`)
	})

	if got := denied(a); len(got) != 0 {
		t.Fatalf("first request of each client: %d denied, want none (a budget of one each)", len(got))
	}
	at30 := denied(a)
	// Binomial(200, 0.3): mean 60, standard deviation 6.5; four of them either side.
	if n := len(at30); n < 34 || n > 86 {
		t.Errorf("at 30 %%, %d of 200 clients denied over their budget, want 34 to 86", n)
	}
	if onB := denied(b); !slices.Equal(onB, at30) {
		t.Errorf("at 30 %%, replica B denied %d clients, want the same %d as A", len(onB), len(at30))
	}
	if got, want := decisionsOf(t, a, "shadow-per-ip", "unenforced_denied"), int64(len(clients)-len(at30)); got != want {
		t.Errorf("A: ratelimit_decisions_total{rule=shadow-per-ip, outcome=unenforced_denied} = %d, want %d", got, want)
	}
	if got, want := decisionsOf(t, a, "shadow-per-ip", "denied"), int64(len(at30)); got != want {
		t.Errorf("A: ratelimit_decisions_total{rule=shadow-per-ip, outcome=denied} = %d, want %d", got, want)
	}

	if code, body := a.adminCall(t, "PATCH", "/admin/limits/shadow-per-ip", `{"enforce_percent":100}`); code != http.StatusOK {
		t.Fatalf("A: PATCH enforce_percent 100 = %d %s, want 200", code, body)
	}
	if got := denied(a); len(got) != len(clients) {
		t.Errorf("at 100 %%, %d of %d clients denied over their budget, want all", len(got), len(clients))
	}
	if got := decisionsOf(t, a, "shadow-per-ip", "unenforced_denied"); got != int64(len(clients)-len(at30)) {
		t.Errorf("A: unenforced_denied grew to %d at 100 %%, want it unchanged", got)
	}
}

// decisionsOf sums the series of ratelimit_decisions_total of rule and outcome in p's
// /metrics.
func decisionsOf(t *testing.T, p *process, rule, outcome string) int64 {
	t.Helper()
	var total int64
	for _, line := range strings.Split(p.metrics(t), "\n") {
		if !strings.HasPrefix(line, "ratelimit_decisions_total{") || !strings.Contains(line, `rule="`+rule+`"`) ||
			!strings.Contains(line, `outcome="`+outcome+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += int64(v)
	}
	return total
}
