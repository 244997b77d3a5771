// Package telemetry gives one BoxOffice service its metrics and traces.
//
// Metrics answer "how much, how fast, how often" (requests per second, p99 latency, 429s by
// rule) and are scraped by Prometheus from each process's /metrics. Traces answer "where did
// this one request spend its time": each hop (gateway, BFF, service) records a span, and the
// W3C traceparent header carries the trace id from hop to hop so the spans join into one trace
// in Jaeger.
//
// Libraries in BoxOffice never reach for global providers: they take a metric.MeterProvider
// and a trace.TracerProvider. Setup builds both for one service. In the all-in-one mode many
// services share a process, so each Setup owns its own Prometheus registry and providers: the
// catalog's /metrics never shows the order service's counters. Only the text-map propagator is
// global, because it holds no state and every hop must speak the same header format.
package telemetry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
)

// Config names the service and where its traces go. The zero value is usable: metrics only,
// with an empty service name and a random instance id.
type Config struct {
	Service      string // service.name resource attribute
	Instance     string // service.instance.id (e.g. host:port); "" = random
	OTLPEndpoint string // OTEL_EXPORTER_OTLP_ENDPOINT; "" = tracing off (no-op tracer provider)
}

// Telemetry is one service's providers. Its methods are safe for concurrent use, and safe on a
// nil *Telemetry, which means "no instrumentation": middleware and options pass through and
// MetricsHandler answers 404.
type Telemetry struct {
	MeterProvider  metric.MeterProvider // always set (SDK with a Prometheus exporter)
	TracerProvider trace.TracerProvider // SDK with OTLP/gRPC batch exporter, or no-op

	service string
	metrics http.Handler
	// shutdown flushes and stops the SDK providers, in the order they were built.
	shutdown     []func(context.Context) error
	shutdownOnce sync.Once
	shutdownErr  error
}

// propagator is the one wire format for trace context: W3C traceparent/tracestate, plus
// baggage. It is installed globally once, for code that only knows otel.GetTextMapPropagator
// (NATS headers, third-party clients); this package passes it explicitly.
var (
	propagator      = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	installGlobally sync.Once
)

// Setup builds the meter provider (exported through a registry of its own, with the Go runtime
// and process collectors) and, when cfg.OTLPEndpoint is set, a tracer provider that batches
// spans to an OTLP/gRPC collector. Call Shutdown to flush the last spans on exit.
//
// OTLPEndpoint is either a URL (http://jaeger:4317, https://collector:4317: the scheme picks
// TLS) or a bare host:port, taken as plaintext: collectors inside compose or a cluster network
// rarely have certificates, and a URL with https states the other intent explicitly.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	installGlobally.Do(func() { otel.SetTextMapPropagator(propagator) })

	instance := cfg.Instance
	if instance == "" {
		instance = rand.Text() // unique per process start, like a pod name
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(cfg.Service), semconv.ServiceInstanceID(instance)),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}

	registry := prometheus.NewRegistry()
	if err := registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register go collector: %w", err)
	}
	if err := registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	promExporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		// Prometheus-style names (http_server_request_duration_seconds) whatever the
		// process-wide name validation scheme says, so dashboards can rely on them.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		// Without this every series carries otel_scope_name/version labels naming the
		// instrumentation library. BoxOffice metric names are already unique per library,
		// so the labels would only add cardinality and clutter to every query.
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(promExporter))

	t := &Telemetry{
		MeterProvider:  mp,
		TracerProvider: noop.NewTracerProvider(),
		service:        cfg.Service,
		metrics:        promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry}),
		shutdown:       []func(context.Context) error{mp.Shutdown},
	}
	if cfg.OTLPEndpoint != "" {
		exporter, err := otlpExporter(ctx, cfg.OTLPEndpoint)
		if err != nil {
			_ = mp.Shutdown(ctx)
			return nil, err
		}
		// Batching keeps export off the request path; the price is that spans of the last
		// few seconds are lost if the process dies without Shutdown.
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exporter))
		t.TracerProvider = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	return t, nil
}

// otlpExporter builds the OTLP/gRPC span exporter. It does not connect here: the gRPC client
// dials lazily, so a collector that starts later than the service still gets its spans.
func otlpExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure()}
	if strings.Contains(endpoint, "://") {
		opts = []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint)}
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter %s: %w", endpoint, err)
	}
	return exp, nil
}

// MetricsHandler serves every metric of this Telemetry in the Prometheus text format; mount it
// at /metrics.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t == nil {
		return http.NotFoundHandler()
	}
	return t.metrics
}

// Shutdown flushes the spans still batched and stops both providers. Metrics are pulled, so
// after Shutdown the handler serves no more OpenTelemetry series. The first call does the work
// and later calls return its result; ctx bounds the flush.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.shutdownOnce.Do(func() {
		var errs []error
		for _, stop := range t.shutdown {
			if err := stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			t.shutdownErr = fmt.Errorf("telemetry shutdown: %w", err)
		}
	})
	return t.shutdownErr
}

// HTTPMiddleware wraps a handler so each request gets a server span (continuing the caller's
// trace when a traceparent header arrives) and is counted in the http.server.* metrics, exported
// as http_server_request_duration_seconds and friends. operation names the span when no route
// is known.
func (t *Telemetry) HTTPMiddleware(operation string) func(http.Handler) http.Handler {
	if t == nil {
		return func(h http.Handler) http.Handler { return h }
	}
	// server.address would otherwise come from the Host header, which any client can fill
	// with a new value per request: one new set of series each time.
	opts := append(t.httpOptions(), otelhttp.WithServerName(t.service))
	return func(h http.Handler) http.Handler {
		return otelhttp.NewHandler(h, operation, opts...)
	}
}

// HTTPTracing is HTTPMiddleware without the http.server.* metrics, for a process that records
// its own RED metrics per route (the gateway): otelhttp's would count each request twice, at
// about a tenth of a small request's CPU. With tracing off it still carries the caller's trace
// context. continueFrom says whose trace context to continue (nil: every caller's); another
// caller's span starts a trace of its own, linked, so a client on the internet can neither
// pick the trace id nor turn sampling off (docs/lessons/gateway.md, "What it does, step by step").
func (t *Telemetry) HTTPTracing(operation string, continueFrom func(*http.Request) bool) func(http.Handler) http.Handler {
	if t == nil {
		return func(h http.Handler) http.Handler { return h }
	}
	if _, off := t.TracerProvider.(noop.TracerProvider); off {
		return func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if continueFrom != nil && !continueFrom(r) {
					h.ServeHTTP(w, r)
					return
				}
				ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
				if ctx != r.Context() {
					r = r.WithContext(ctx)
				}
				h.ServeHTTP(w, r)
			})
		}
	}
	opts := append(t.httpOptions(), otelhttp.WithServerName(t.service), otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()))
	if continueFrom != nil {
		opts = append(opts, otelhttp.WithPublicEndpointFn(func(r *http.Request) bool { return !continueFrom(r) }))
	}
	return func(h http.Handler) http.Handler {
		return otelhttp.NewHandler(h, operation, opts...)
	}
}

// HTTPTransport wraps base (nil = http.DefaultTransport) so each outgoing request gets a client
// span and carries traceparent to the next hop.
func (t *Telemetry) HTTPTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if t == nil {
		return base
	}
	return otelhttp.NewTransport(base, t.httpOptions()...)
}

// GRPCServerOption instruments a gRPC server: a span and rpc.server.* metrics per call,
// continuing the caller's trace from the request metadata.
func (t *Telemetry) GRPCServerOption() grpc.ServerOption {
	if t == nil {
		return grpc.EmptyServerOption{}
	}
	return grpc.StatsHandler(otelgrpc.NewServerHandler(t.grpcOptions()...))
}

// GRPCDialOption instruments a gRPC client connection: a span and rpc.client.* metrics per
// call, with the trace context sent in the request metadata.
func (t *Telemetry) GRPCDialOption() grpc.DialOption {
	if t == nil {
		return grpc.EmptyDialOption{}
	}
	return grpc.WithStatsHandler(otelgrpc.NewClientHandler(t.grpcOptions()...))
}

func (t *Telemetry) httpOptions() []otelhttp.Option {
	return []otelhttp.Option{
		otelhttp.WithTracerProvider(t.TracerProvider),
		otelhttp.WithMeterProvider(t.MeterProvider),
		otelhttp.WithPropagators(propagator),
	}
}

func (t *Telemetry) grpcOptions() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.TracerProvider),
		otelgrpc.WithMeterProvider(t.MeterProvider),
		otelgrpc.WithPropagators(propagator),
	}
}
