package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/telemetry"
	"boxoffice.dev/platform/testkit"
)

// benchPolicy is the policy of the bench-gateway program (tools/bench-gateway): one route with no
// policy, and one with a user JWT and two Redis-backed rules far above any load. The
// benchmark's client is not loopback, so the pre-limit decides every request too, on a
// bucket it never empties.
const benchPolicy = `
settings: {local_ip_limit: {rate: 1000000/s, burst: 1000000}}
services: [{name: bench, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: plain, match: {method: GET, path: /v1/plain}, service: bench, auth: none}
  - {id: jwt, match: {method: GET, path: /v1/bench}, service: bench, auth: user, limits: [bench-per-user, bench-per-ip]}
limits:
  - {id: bench-per-user, key: user, algorithm: token_bucket, rate: 1000000/s, burst: 1000000}
  - {id: bench-per-ip, key: ip, algorithm: gcra, rate: 1000000/s, burst: 1000000}
`

// answering is an upstream layer that answers every request at once, as the bench's upstream
// does, so that a benchmark measures the gateway's own work.
type answering struct{}

func (answering) Forward(w http.ResponseWriter, r *http.Request, service string, ro upstream.RouteOptions) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"id":"evt-bench"}`)
}

// BenchmarkPipeline measures the public pipeline in-process, from request id to the
// upstream layer (answering at once), with a real Redis and a real OpenTelemetry SDK meter:
//
//	go test -run '^$' -bench Pipeline -benchmem ./gateway
//
// "baseline" is the cost of the benchmark's own request and recorder; "plain" a route with
// no policy; "jwt+2-redis" the bench's route (a user token and two rules in one Redis
// call); "access-log" the same with the JSON access log written (to io.Discard); and
// "platform" the same inside the platform's HTTP middleware (otelhttp), as Run serves it.
// The limiter's own cost is the ratelimit package's benchmarks'.
func BenchmarkPipeline(b *testing.B) {
	rd := testkit.StartRedis(b)
	ks := newKeySet(b, "k1")
	live := liveOf(b, benchPolicy)
	limiter, err := ratelimit.New(ratelimit.Options{Client: rd.Client(), Timeout: time.Second}) // as Run makes it
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = limiter.Close() })
	jwks := authn.NewJWKS(ks.URL+"/.well-known/jwks.json", authn.JWKSOptions{})
	if err := jwks.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	m, err := newMetrics(mp)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gw := func(log *slog.Logger) *gateway {
		return &gateway{
			live: live, auth: &authn.Authenticator{Tokens: authn.NewVerifier(jwks, "boxoffice-auth", "boxoffice", time.Second)},
			enforcer: limits.NewEnforcer(limiter, nil, nil), upstream: answering{},
			log: log, metrics: m, now: time.Now, newTrace: randomTrace,
		}
	}
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Service: "gateway"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	bearer := "Bearer " + ks.sign(b, "k1", "usr_bench", time.Now(), time.Hour)

	tests := []struct {
		name    string
		h       http.Handler
		path    string
		bearer  bool
		wantLog bool
	}{
		{"baseline", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answering{}.Forward(w, r, "", upstream.RouteOptions{}) }), "/v1/plain", false, false},
		{"plain", gw(quiet).handler(), "/v1/plain", false, false},
		{"jwt+2-redis", gw(quiet).handler(), "/v1/bench", true, false},
		{"access-log", gw(slog.New(slog.NewJSONHandler(io.Discard, nil))).handler(), "/v1/bench", true, true},
		{"platform", tel.HTTPMiddleware("gateway")(gw(quiet).handler()), "/v1/bench", true, false},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			req := func() *http.Request {
				r := httptest.NewRequest(http.MethodGet, tt.path, nil)
				r.RemoteAddr = "192.0.2.7:41000"
				if tt.bearer {
					r.Header.Set("Authorization", bearer)
				}
				return r
			}
			w := httptest.NewRecorder()
			tt.h.ServeHTTP(w, req())
			if w.Code != http.StatusOK {
				b.Fatalf("GET %s = %d %s, want 200", tt.path, w.Code, w.Body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := httptest.NewRecorder()
				tt.h.ServeHTTP(w, req())
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s = %d %s, want 200", tt.path, w.Code, w.Body)
				}
			}
		})
	}
}
