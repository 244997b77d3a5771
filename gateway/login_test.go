package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/testkit"
)

// loginPolicy puts the default policy's login limits (gateway/policy.yaml, read by
// shippedLoginLimits) on a login route to the backend.
const loginPolicy = `
services:
  - {name: auth, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: login, match: {method: POST, path: /v1/auth/login}, service: auth, auth: none, limits: [LIMITS], retry: false}
limits:
`

// shippedLoginLimits returns the login route's limits as gateway/policy.yaml defines them,
// so that the test holds the numbers the gateway runs with.
func shippedLoginLimits(t *testing.T) []policy.Limit {
	t.Helper()
	data, err := os.ReadFile("policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Routes, func(r policy.Route) bool { return r.ID == "login" })
	if i < 0 {
		t.Fatal("policy.yaml has no login route")
	}
	var out []policy.Limit
	for _, l := range p.Limits {
		if slices.Contains(p.Routes[i].Limits, l.ID) {
			out = append(out, l)
		}
	}
	return out
}

// TestLoginLockout shows the login limits of the default policy through the gateway, with a
// backend that accepts one password: a stranger who spends an account's failures from one
// address is refused, the owner elsewhere still logs in, and many networks together do
// reach the account's ceiling, which then refuses the owner too.
func TestLoginLockout(t *testing.T) {
	shipped := shippedLoginLimits(t)
	keys := map[string]string{}
	var ids []string
	limitDocs := ""
	for _, l := range shipped {
		keys[l.ID] = l.Key
		ids = append(ids, l.ID)
		j, _ := json.Marshal(l) // JSON is YAML, and the field names are the same
		limitDocs += "  - " + string(j) + "\n"
	}
	const ceiling = "login-per-account-ceiling"
	if keys["login-per-account"] != "json:email+net" || keys[ceiling] != "json:email" {
		t.Fatalf("policy.yaml's login limits are keyed %v, want login-per-account by json:email+net and %s by json:email", keys, ceiling)
	}
	be := serveBackend(t, func(w http.ResponseWriter, r *http.Request) {
		var c struct{ Email, Password string }
		_ = json.NewDecoder(r.Body).Decode(&c)
		if strings.EqualFold(c.Email, "ana@example.org") && c.Password == "right" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	})
	rd := testkit.StartRedis(t)
	doc := strings.Replace(loginPolicy, "LIMITS", strings.Join(ids, ", "), 1) + limitDocs
	gw := startGateway(t, doc, be, map[string]string{"REDIS_URL": rd.URL(), "TRUSTED_PROXIES": "127.0.0.1/32"})

	passed := 0 // attempts on the account that reached the backend
	login := func(from, password string) response {
		t.Helper()
		res := gw.call(t, "POST", "/v1/auth/login", `{"email":"Ana@Example.org","password":"`+password+`"}`,
			"Content-Type", "application/json", "X-Forwarded-For", from)
		if res.status != http.StatusTooManyRequests {
			passed++
		}
		return res
	}
	violated := func(res response) []string {
		var body limits.TooMany
		_ = json.Unmarshal(res.body, &body)
		return body.ViolatedPolicies
	}
	const owner = "198.51.100.20"
	if res := login(owner, "right"); res.status != http.StatusOK {
		t.Fatalf("owner's first login = %d %s, want 200", res.status, res.body)
	}

	// One address guesses until refused: its network's budget for the account is spent.
	const stranger = "203.0.113.7"
	failures := 0
	for range 20 {
		res := login(stranger, fmt.Sprintf("guess-%d", failures))
		if res.status == http.StatusTooManyRequests {
			if got := violated(res); !slices.Equal(got, []string{"login-per-account"}) {
				t.Fatalf("stranger refused by %v, want login-per-account", got)
			}
			break
		}
		if res.status != http.StatusUnauthorized {
			t.Fatalf("guess %d = %d %s, want 401", failures+1, res.status, res.body)
		}
		failures++
	}
	if failures == 0 || failures >= 20 {
		t.Fatalf("stranger had %d failures before a 429, want a few", failures)
	}
	// Their whole /24 shares that budget.
	if res := login("203.0.113.99", "guess"); res.status != http.StatusTooManyRequests {
		t.Errorf("a neighbour in the stranger's /24 = %d, want 429", res.status)
	}
	// The owner, from another network, is not locked out, and has failures of their own.
	if res := login(owner, "right"); res.status != http.StatusOK {
		t.Fatalf("owner after the stranger's guesses = %d %s, want 200", res.status, res.body)
	}
	if res := login(owner, "typo"); res.status != http.StatusUnauthorized {
		t.Errorf("owner's typo = %d, want 401: their budget is their own", res.status)
	}

	// Many networks together reach the account's ceiling. Each guesses up to its own
	// budget; the ceiling refuses one of them before 40 networks are used.
	var refused response
	for k := 1; k <= 40 && refused.status == 0; k++ {
		from := fmt.Sprintf("10.%d.0.1", k)
		for range failures {
			if res := login(from, "guess"); res.status == http.StatusTooManyRequests {
				if !slices.Contains(violated(res), ceiling) {
					t.Fatalf("network %s refused by %v before its budget was spent, want %s", from, violated(res), ceiling)
				}
				refused = res
				break
			}
		}
	}
	if refused.status == 0 {
		t.Fatalf("40 networks guessed %d times each without reaching %s", failures, ceiling)
	}
	burst := shipped[slices.IndexFunc(shipped, func(l policy.Limit) bool { return l.ID == ceiling })].Burst
	// The bucket refills a token every 36s: a slow run may see one more pass.
	if passed < burst || passed > burst+1 {
		t.Errorf("attempts that reached the backend = %d, want the ceiling's burst, %d", passed, burst)
	}
	// That is the ceiling's price: the owner is refused too while it is spent.
	if res := login(owner, "right"); res.status != http.StatusTooManyRequests || !slices.Contains(violated(res), ceiling) {
		t.Errorf("owner with the ceiling spent = %d %s, want 429 naming %s", res.status, res.body, ceiling)
	}
}
