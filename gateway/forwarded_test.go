package gateway

import (
	"strconv"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestForwardedForSentUpstream: the upstream receives in X-Forwarded-For the chain the
// gateway believed, from the client it resolved to the peer, never hops a client wrote for
// itself; and the access log names that same client.
func TestForwardedForSentUpstream(t *testing.T) {
	be := newHeaderBackend(t)
	rd := testkit.StartRedis(t)
	gateways := map[bool]*process{
		false: startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL()}),
		true:  startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "TRUSTED_PROXIES": "127.0.0.1"}),
	}
	tests := []struct {
		name    string
		trusted bool     // whether the gateway trusts this test, its peer, as a proxy
		xff     []string // one header line each
		want    string   // X-Forwarded-For upstream
		wantLog string   // the access log's ip
	}{
		{"untrusted peer, no header: the peer", false, nil, "127.0.0.1", "127.0.0.1"},
		{"untrusted peer: the client's chain is dropped", false, []string{"6.6.6.6, 198.51.100.7"}, "127.0.0.1", "127.0.0.1"},
		{"trusted peer: from the client on", true, []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7, 127.0.0.1", "198.51.100.7"},
		{"trusted peer, several lines, ports", true, []string{"6.6.6.6", "198.51.100.7:5555, 127.0.0.1"}, "198.51.100.7, 127.0.0.1, 127.0.0.1", "198.51.100.7"},
		{"trusted peer, a hop it could not name", true, []string{"6.6.6.6, unknown"}, "unknown, 127.0.0.1", "0.0.0.0"},
		{"trusted peer, no header: the peer", true, nil, "127.0.0.1", "127.0.0.1"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := gateways[tt.trusted]
			id := "xff-" + strconv.Itoa(i)
			header := []string{"X-Request-Id", id}
			for _, v := range tt.xff {
				header = append(header, "X-Forwarded-For", v)
			}
			got := gw.call(t, "GET", "/v1/public", "", header...).upstreamHeader(t)
			if xff := got.Values("X-Forwarded-For"); len(xff) != 1 || xff[0] != tt.want {
				t.Errorf("upstream X-Forwarded-For = %q, want %q", xff, tt.want)
			}
			var ip any
			testkit.Eventually(t, 3*time.Second, "the request's access log line", func() bool {
				for _, l := range gw.accessLog(t) {
					if l["request_id"] == id {
						ip = l["ip"]
						return true
					}
				}
				return false
			})
			if ip != tt.wantLog {
				t.Errorf("access log ip = %v, want %s", ip, tt.wantLog)
			}
		})
	}
}
