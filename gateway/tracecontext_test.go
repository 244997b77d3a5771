package gateway

import (
	"strings"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestClientTraceContextOnlyThroughTrustedProxies: the gateway is the public edge, so a
// traceparent is continued only when it arrives through a trusted proxy. Anyone else's
// request gets a trace of the gateway's own: a client cannot choose the trace id that the
// logs, the problem bodies and every service downstream show, nor turn sampling off for its
// requests.
func TestClientTraceContextOnlyThroughTrustedProxies(t *testing.T) {
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent := "00-" + clientTrace + "-00f067aa0ba902b7-00" // not sampled, as a client may ask
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	tests := []struct {
		name      string
		env       map[string]string
		continued bool
	}{
		{"a client on the internet", map[string]string{"REDIS_URL": rd.URL()}, false},
		{"through a trusted proxy", map[string]string{"REDIS_URL": rd.URL(), "TRUSTED_PROXIES": "127.0.0.1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := startGateway(t, testPolicy, be, tt.env)
			res := gw.call(t, "GET", "/v1/public", "", "Traceparent", traceparent)
			seen := res.seen(t)
			if got := strings.Contains(seen.Traceparent, clientTrace); got != tt.continued {
				t.Errorf("upstream traceparent %q carries the client's trace: %v, want %v", seen.Traceparent, got, tt.continued)
			}
			if seen.Traceparent == "" || seen.RequestID == "" {
				t.Errorf("upstream traceparent %q, request id %q; want both set", seen.Traceparent, seen.RequestID)
			}
			if !tt.continued && strings.Contains(seen.RequestID, clientTrace) {
				t.Errorf("upstream request id %q is the client's trace id", seen.RequestID)
			}
		})
	}
}
