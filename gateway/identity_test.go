package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
)

// newHeaderBackend is an upstream that answers with the headers it received, as JSON.
func newHeaderBackend(t *testing.T) *backend {
	t.Helper()
	return serveBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.Header)
	})
}

// serveBackend is an upstream instance answering its probes, and every other request with
// h, which it counts; closed when the test ends.
func serveBackend(t *testing.T, h http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		b.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

// upstreamHeader decodes what a header backend received.
func (r response) upstreamHeader(t *testing.T) http.Header {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", r.status, r.body)
	}
	var h http.Header
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return h
}

// TestConnectionCannotStripGatewayHeaders: a client naming the gateway's own headers in
// Connection (which makes them hop-by-hop, removed by the proxy) still has its verified
// identity, request id and trace context reach the upstream, while the other headers it
// names there are still not forwarded.
func TestConnectionCannotStripGatewayHeaders(t *testing.T) {
	ks := newKeySet(t, "k1")
	be := newHeaderBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": ks.URL})
	bearer := "Bearer " + ks.sign(t, "k1", "usr_ana", time.Now(), time.Hour)

	tests := []struct {
		name       string
		connection []string // one Connection line each
		wantCustom string   // X-Custom upstream: "" when Connection names it
	}{
		{"identity and request id", []string{"X-Boxoffice-User, X-Request-Id"}, "hop"},
		{"every header the gateway sets", []string{"X-Boxoffice-User, X-Boxoffice-Tenant, X-Boxoffice-Plan, X-Request-Id, " +
			"Traceparent, Tracestate, Baggage, Forwarded, X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Proto"}, "hop"},
		{"lower case, beside hop-by-hop names, over two lines", []string{"keep-alive, x-boxoffice-user", " X-Custom ,traceparent"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := []string{"Authorization", bearer, "X-Request-Id", "req-42", "X-Custom", "hop"}
			for _, c := range tt.connection {
				header = append(header, "Connection", c)
			}
			got := gw.call(t, "GET", "/v1/me", "", header...).upstreamHeader(t)
			if id := got.Get(identity.HeaderUser); id != "usr_ana" {
				t.Errorf("upstream %s = %q, want usr_ana", identity.HeaderUser, id)
			}
			if id := got.Get("X-Request-Id"); id != "req-42" {
				t.Errorf("upstream X-Request-Id = %q, want req-42", id)
			}
			for _, h := range []string{"Traceparent", "X-Forwarded-For", "X-Forwarded-Proto"} {
				if got.Get(h) == "" {
					t.Errorf("upstream %s is missing", h)
				}
			}
			if c := got.Get("X-Custom"); c != tt.wantCustom {
				t.Errorf("upstream X-Custom = %q, want %q", c, tt.wantCustom)
			}
		})
	}
}
