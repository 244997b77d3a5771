package telemetry

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// setupT runs Setup and shuts the providers down when the test ends.
func setupT(t *testing.T, cfg Config) *Telemetry {
	t.Helper()
	tel, err := Setup(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Setup(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

// scrape returns what the telemetry's /metrics serves.
func scrape(t *testing.T, tel *Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// seriesValue finds the sample line of a series whose name and labels start with prefix and
// returns its value; "" when there is none.
func seriesValue(metrics, prefix string) string {
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

func TestMetricsHandler(t *testing.T) {
	tel := setupT(t, Config{Service: "catalog", Instance: "127.0.0.1:9001"})
	hits, err := tel.MeterProvider.Meter("boxoffice.dev/test").Int64Counter("boxoffice.test.hits")
	if err != nil {
		t.Fatal(err)
	}
	hits.Add(context.Background(), 3)
	got := scrape(t, tel)

	tests := []struct {
		name, prefix, want string // want "" means any value
	}{
		{"counter from the meter provider", "boxoffice_test_hits_total ", "3"},
		{"go runtime collector", "go_goroutines ", ""},
		{"process collector", "process_cpu_seconds_total ", ""},
		{"resource in target_info", `target_info{service_instance_id="127.0.0.1:9001",service_name="catalog"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := seriesValue(got, tc.prefix)
			if v == "" || (tc.want != "" && v != tc.want) {
				t.Errorf("series %q = %q, want %q in\n%s", tc.prefix, v, tc.want, got)
			}
		})
	}
	if strings.Contains(got, "otel_scope_name") {
		t.Errorf("/metrics carries otel_scope_name labels, want none:\n%s", got)
	}
}

func TestSetupsDoNotShareMetrics(t *testing.T) {
	order := setupT(t, Config{Service: "order"})
	payment := setupT(t, Config{Service: "payment"})
	for name, tel := range map[string]*Telemetry{"order": order, "payment": payment} {
		c, err := tel.MeterProvider.Meter("boxoffice.dev/test").Int64Counter("boxoffice." + name + ".calls")
		if err != nil {
			t.Fatal(err)
		}
		c.Add(context.Background(), 1)
	}
	tests := []struct {
		name       string
		tel        *Telemetry
		has, lacks string
	}{
		{"order", order, "boxoffice_order_calls_total", "boxoffice_payment_calls_total"},
		{"payment", payment, "boxoffice_payment_calls_total", "boxoffice_order_calls_total"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scrape(t, tc.tel)
			if !strings.Contains(got, tc.has) {
				t.Errorf("%s /metrics lacks %s", tc.name, tc.has)
			}
			if strings.Contains(got, tc.lacks) {
				t.Errorf("%s /metrics has %s, want only its own metrics", tc.name, tc.lacks)
			}
		})
	}
}

func TestTracingOffWithoutEndpoint(t *testing.T) {
	tel := setupT(t, Config{Service: "search"})
	_, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	if span.IsRecording() {
		t.Errorf("span.IsRecording() = true with no OTLP endpoint, want false")
	}
	if span.SpanContext().IsValid() {
		t.Errorf("span context %v is valid with no OTLP endpoint, want the no-op's invalid one", span.SpanContext())
	}
}

func TestHTTPMiddlewareRecordsDuration(t *testing.T) {
	tel := setupT(t, Config{Service: "catalog"})
	h := tel.HTTPMiddleware("catalog")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	// Two requests with different Host headers: a client must not be able to mint new
	// series, so both land in one, labelled with the service name.
	for _, host := range []string{"a.example", "b.example"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/events", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("GET with Host %s: %v", host, err)
		}
		_ = resp.Body.Close()
	}
	got := scrape(t, tel)
	count := seriesValue(got, "http_server_request_duration_seconds_count{")
	if count != "2" {
		t.Errorf("http_server_request_duration_seconds_count = %q, want 2 in\n%s", count, got)
	}
	for _, label := range []string{`http_response_status_code="418"`, `server_address="catalog"`} {
		if !strings.Contains(got, label) {
			t.Errorf("/metrics lacks the label %s:\n%s", label, got)
		}
	}
}

// get sends a GET and drains the response.
func get(t *testing.T, c *http.Client, url string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// collector is a real OTLP/gRPC trace receiver on a loopback port: what Jaeger or an
// OpenTelemetry Collector is to a deployed service.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	addr string

	mu    sync.Mutex
	spans []*tracepb.Span
	attrs map[string]string // resource attributes of the last export
}

func startCollector(t *testing.T) *collector {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{addr: l.Addr().String(), attrs: map[string]string{}}
	s := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(s, c)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return c
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			c.attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// span returns the received span of the given kind; it fails the test when there is not
// exactly one.
func (c *collector) span(t *testing.T, kind tracepb.Span_SpanKind) *tracepb.Span {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var found []*tracepb.Span
	for _, s := range c.spans {
		if s.GetKind() == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("collector received %d spans of kind %v, want 1 (all: %v)", len(found), kind, c.spans)
	}
	return found[0]
}

// traceSeen sends a request carrying the caller's traceparent through middleware and
// returns the span context its handler saw.
func traceSeen(middleware func(http.Handler) http.Handler, callerTrace, callerSpan string) trace.SpanContext {
	var seen trace.SpanContext
	h := middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = trace.SpanContextFromContext(r.Context())
	}))
	req := httptest.NewRequest(http.MethodGet, "/v1/events", nil)
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	return seen
}

func TestHTTPMiddlewareContinuesTrace(t *testing.T) {
	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	tests := []struct {
		name     string
		endpoint func(addr string) string
	}{
		{"host:port endpoint", func(addr string) string { return addr }},
		{"URL endpoint", func(addr string) string { return "http://" + addr }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			col := startCollector(t)
			tel := setupT(t, Config{Service: "inventory", Instance: "i-1", OTLPEndpoint: tc.endpoint(col.addr)})

			inHandler := traceSeen(tel.HTTPMiddleware("inventory"), callerTrace, callerSpan)
			if got := inHandler.TraceID().String(); got != callerTrace {
				t.Errorf("handler's trace id = %s, want the caller's %s", got, callerTrace)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tel.Shutdown(ctx); err != nil { // flushes the batch to the collector
				t.Fatalf("Shutdown: %v", err)
			}
			span := col.span(t, tracepb.Span_SPAN_KIND_SERVER)
			if got := hex.EncodeToString(span.GetTraceId()); got != callerTrace {
				t.Errorf("exported server span trace id = %s, want %s", got, callerTrace)
			}
			if got := hex.EncodeToString(span.GetParentSpanId()); got != callerSpan {
				t.Errorf("exported server span parent = %s, want the caller's span %s", got, callerSpan)
			}
			if got := col.attrs["service.name"]; got != "inventory" {
				t.Errorf("exported resource service.name = %q, want inventory", got)
			}
			if got := col.attrs["service.instance.id"]; got != "i-1" {
				t.Errorf("exported resource service.instance.id = %q, want i-1", got)
			}
		})
	}
}

// TestHTTPTransportJoinsTrace sends a request through HTTPTransport to a server wrapped in
// HTTPMiddleware: the two spans must form one trace, the server's a child of the client's.
func TestHTTPTransportJoinsTrace(t *testing.T) {
	col := startCollector(t)
	tel := setupT(t, Config{Service: "gateway", OTLPEndpoint: col.addr})
	srv := httptest.NewServer(tel.HTTPMiddleware("upstream")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()

	get(t, &http.Client{Transport: tel.HTTPTransport(nil)}, srv.URL)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	client := col.span(t, tracepb.Span_SPAN_KIND_CLIENT)
	server := col.span(t, tracepb.Span_SPAN_KIND_SERVER)
	if !bytes.Equal(server.GetTraceId(), client.GetTraceId()) {
		t.Errorf("server trace id = %x, want the client's %x", server.GetTraceId(), client.GetTraceId())
	}
	if !bytes.Equal(server.GetParentSpanId(), client.GetSpanId()) {
		t.Errorf("server parent = %x, want the client span %x", server.GetParentSpanId(), client.GetSpanId())
	}
}

// TestGRPCOptions calls a real gRPC server instrumented with GRPCServerOption through a client
// using GRPCDialOption and expects both sides' call durations in /metrics.
func TestGRPCOptions(t *testing.T) {
	tel := setupT(t, Config{Service: "order"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(tel.GRPCServerOption())
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(l) }()
	defer s.Stop()

	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), tel.GRPCDialOption())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("Check: %v", err)
	}

	// The server records its call when its handler returns, which may be just after the
	// client has the answer: poll, within a deadline, rather than read once.
	var got string
	counted := func() bool {
		got = scrape(t, tel)
		return seriesValue(got, "rpc_server_call_duration_seconds_count{") == "1" &&
			seriesValue(got, "rpc_client_call_duration_seconds_count{") == "1"
	}
	deadline := time.Now().Add(5 * time.Second)
	for !counted() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, series := range []string{"rpc_server_call_duration_seconds_count{", "rpc_client_call_duration_seconds_count{"} {
		if v := seriesValue(got, series); v != "1" {
			t.Errorf("%s = %q, want 1 in\n%s", series, v, got)
		}
	}
}

// TestNilTelemetry holds the promise that a nil *Telemetry means no instrumentation.
func TestNilTelemetry(t *testing.T) {
	var tel *Telemetry
	called := false
	h := tel.HTTPMiddleware("x")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if !called {
		t.Errorf("nil Telemetry middleware did not call the handler")
	}
	if got := tel.HTTPTransport(nil); got != http.DefaultTransport {
		t.Errorf("nil Telemetry HTTPTransport(nil) = %T, want http.DefaultTransport", got)
	}
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("nil Telemetry /metrics = %d, want 404", rec.Code)
	}
	if _, ok := tel.GRPCServerOption().(grpc.EmptyServerOption); !ok {
		t.Errorf("nil Telemetry GRPCServerOption = %T, want grpc.EmptyServerOption", tel.GRPCServerOption())
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Errorf("nil Telemetry Shutdown = %v, want nil", err)
	}
}

func TestShutdownTwice(t *testing.T) {
	tel := setupT(t, Config{Service: "auth"})
	for i := range 2 {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown #%d = %v, want nil", i+1, err)
		}
	}
}

// HTTPTracing continues the trace of a caller continueFrom accepts, with tracing on and off;
// any other caller's request starts a trace of its own (linked to the caller's, with tracing
// on). It records none of the http.server metrics HTTPMiddleware does.
func TestHTTPTracing(t *testing.T) {
	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	for _, tracing := range []bool{false, true} {
		for _, trusted := range []bool{true, false} {
			name := map[bool]string{false: "tracing off", true: "tracing on"}[tracing] + map[bool]string{true: ", trusted caller", false: ", untrusted caller"}[trusted]
			t.Run(name, func(t *testing.T) {
				cfg := Config{Service: "gateway"}
				var col *collector
				if tracing {
					col = startCollector(t)
					cfg.OTLPEndpoint = col.addr
				}
				tel := setupT(t, cfg)
				asked := 0
				continueFrom := func(r *http.Request) bool {
					asked++
					return trusted
				}
				inHandler := traceSeen(tel.HTTPTracing("gateway", continueFrom), callerTrace, callerSpan)
				if asked == 0 {
					t.Errorf("continueFrom was never asked")
				}
				if got := inHandler.TraceID().String(); (got == callerTrace) != trusted {
					t.Errorf("handler's trace id = %s; want the caller's %s: %v", got, callerTrace, trusted)
				}
				if got := scrape(t, tel); strings.Contains(got, "http_server_") {
					t.Errorf("/metrics has http.server series; HTTPTracing must not record them:\n%s", got)
				}
				if !tracing {
					return
				}
				if err := tel.Shutdown(context.Background()); err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
				span := col.span(t, tracepb.Span_SPAN_KIND_SERVER)
				if trusted {
					if got := hex.EncodeToString(span.GetParentSpanId()); got != callerSpan {
						t.Errorf("exported server span parent = %s, want the caller's span %s", got, callerSpan)
					}
					return
				}
				if len(span.GetParentSpanId()) != 0 || hex.EncodeToString(span.GetTraceId()) == callerTrace {
					t.Errorf("exported server span: trace %x, parent %x; want a root of a trace of its own", span.GetTraceId(), span.GetParentSpanId())
				}
				if links := span.GetLinks(); len(links) != 1 || hex.EncodeToString(links[0].GetTraceId()) != callerTrace || hex.EncodeToString(links[0].GetSpanId()) != callerSpan {
					t.Errorf("exported server span links = %v, want one to the caller's span %s/%s", links, callerTrace, callerSpan)
				}
			})
		}
	}
}
