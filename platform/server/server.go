// Package server turns a BoxOffice component into a process: configuration, logs, metrics,
// traces, health, the playground's control hook, HTTP and gRPC listeners, and a graceful stop.
//
// Every deployable is built the same way, so a reader who knows one knows them all:
//
//	func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
//		return server.MainWith(ctx, Spec, getenv, stdout, LoadConfig, build)
//	}
//
// where LoadConfig reads the component's settings from a config.Reader and build wires it on
// the ready Server (server.Main when there are no settings).
//
// The process serves its own routes next to /healthz, /readyz, /metrics and /control (an
// edge component, the one clients reach from outside, only next to the first two), and
// runs its background loops as workers (Server.Go). On SIGTERM (ctx cancelled) it marks
// itself not ready, stops accepting connections, lets in-flight requests finish, stops its
// workers and closes what it opened, in reverse order, all within SHUTDOWN_TIMEOUT.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/health"
	"boxoffice.dev/platform/httpserver"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/server/internal/grpcserver"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/telemetry"
)

// Spec names a component and its default listen addresses (HTTP_ADDR and GRPC_ADDR override
// them). An empty GRPCAddr means the component serves no gRPC unless GRPC_ADDR is set.
type Spec struct {
	Name     string
	HTTPAddr string
	GRPCAddr string
	// OwnHTTPMetrics says the component records RED metrics per route itself (the gateway
	// does): its routes are then traced without the platform's http.server.* metrics, which
	// would count each request twice at a cost on the hottest path (telemetry.HTTPTracing).
	OwnHTTPMetrics bool
	// Edge says the component is the system's front door, open to clients from anywhere (the
	// gateway). Only /healthz and /readyz are served there; /metrics and /control, which
	// describe the system and inject faults, go on an internal listener of its own. Its routes
	// get requests as they came: no path cleaning, body limit or RefuseBadText, since the
	// component does its own (docs/lessons/gateway.md, "What it does, step by step").
	Edge bool
}

// Build wires a component's own parts on a ready Server and returns its HTTP routes
// (nil = only the platform endpoints). A nil Build serves only the platform endpoints.
// gRPC services are registered on s.GRPC(), background loops started with s.Go, an internal
// API served on a listener of its own with s.Listen, and what the build opens itself is
// closed through s.OnClose.
type Build func(ctx context.Context, s *Server) (http.Handler, error)

// Main loads the configuration, builds the component and runs it until ctx is done.
// It is the whole body of a deployable's Run that has no settings of its own (MainWith).
func Main(ctx context.Context, spec Spec, getenv func(string) string, stdout io.Writer, build Build) error {
	return MainWith(ctx, spec, getenv, stdout,
		func(*config.Reader) struct{} { return struct{}{} },
		func(ctx context.Context, s *Server, _ struct{}) (http.Handler, error) {
			if build == nil {
				return nil, nil
			}
			return build(ctx, s)
		})
}

// MainWith is Main for a component with settings of its own: load reads them from the same
// environment as the platform's, before anything starts, and every invalid variable, the
// platform's and the component's, is reported in one error, so a misconfigured deployment
// learns all its mistakes in one run. build then gets the settings. Asked for help (Exec),
// it prints every variable the two read, with its default, and starts nothing.
func MainWith[C any](ctx context.Context, spec Spec, getenv func(string) string, stdout io.Writer,
	load func(*config.Reader) C, build func(ctx context.Context, s *Server, cfg C) (http.Handler, error)) error {
	if helpRequested(ctx) {
		return writeSettings(stdout, spec, load)
	}
	r := config.New(getenv)
	cfg, drainDelay, own := readSettings(r, spec, load)
	if err := r.Err(); err != nil {
		return fmt.Errorf("%s: configuration: %w", spec.Name, err)
	}
	s, err := New(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	defer s.Close()
	s.ownHTTPMetrics, s.edge, s.drainDelay = spec.OwnHTTPMetrics, spec.Edge, drainDelay
	h, err := build(ctx, s, own)
	if err != nil {
		return fmt.Errorf("%s: start: %w", spec.Name, err)
	}
	return s.Run(ctx, h)
}

// readSettings reads the platform's variables and then the component's own (load) from r.
func readSettings[C any](r *config.Reader, spec Spec, load func(*config.Reader) C) (config.Process, time.Duration, C) {
	cfg := config.LoadProcess(r, spec.Name, spec.HTTPAddr, spec.GRPCAddr)
	drainDelay := readDrainDelay(r)
	return cfg, drainDelay, load(r)
}

// Server holds what the platform gives one process. Fields are set by New and safe to read
// from any goroutine; NATS is nil when NATS_URL is not set.
type Server struct {
	Config    config.Process
	Log       *slog.Logger
	Telemetry *telemetry.Telemetry
	Health    *health.Checker
	Control   *control.Hook
	NATS      *nats.Conn

	grpc *grpcserver.Server
	work *workers
	// internal are the listeners Listen opened, served by Serve beside the HTTP and gRPC ones.
	internal []internalListener
	// ownHTTPMetrics and edge: see Spec.OwnHTTPMetrics and Spec.Edge.
	ownHTTPMetrics, edge bool
	// traceFrom: see ContinueTracesFrom.
	traceFrom func(*http.Request) bool
	// drainDelay is how long Serve keeps the listeners open after readiness fails
	// (DRAIN_DELAY; 0 in a Server not built by Main).
	drainDelay time.Duration

	now func() time.Time // time.Now; when shutdown began

	mu      sync.Mutex
	closers []func(ctx context.Context) error
	// stopBy is when the process must have stopped: SHUTDOWN_TIMEOUT after shutdown began
	// (see stopDeadline); zero until then.
	stopBy time.Time
}

// New sets up logging, telemetry, health and the control hook, and connects to NATS when
// NATS_URL is set (the control hook then listens on boxoffice.control.<name>).
func New(ctx context.Context, cfg config.Process, stdout io.Writer) (*Server, error) {
	level, err := logging.ParseLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("%s: LOG_LEVEL: %w", cfg.Name, err)
	}
	s := &Server{
		Config: cfg,
		Log:    logging.New(stdout, level, cfg.Name),
		Health: health.New(0),
		work:   newWorkers(ctx),
		now:    time.Now,
	}
	s.Telemetry, err = telemetry.Setup(ctx, telemetry.Config{Service: cfg.Name, Instance: cfg.HTTPAddr, OTLPEndpoint: cfg.OTLPEndpoint})
	if err != nil {
		return nil, fmt.Errorf("%s: telemetry: %w", cfg.Name, err)
	}
	s.Control = control.New(cfg.Name, control.Options{MeterProvider: s.Telemetry.MeterProvider, Log: s.Log})
	s.onClose(s.Telemetry.Shutdown) // flushes the last spans and metrics, until the deadline

	if cfg.NATSURL != "" {
		nc, err := natsconn.Connect(ctx, cfg.NATSURL, cfg.Name, s.Log)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: %w", cfg.Name, err)
		}
		s.NATS = nc
		s.onClose(func(ctx context.Context) error { return drainNATS(ctx, nc) })
		if nc.IsConnected() {
			if err := s.subscribeControl(ctx, nc); err != nil {
				s.Close()
				return nil, fmt.Errorf("%s: control hook: %w", cfg.Name, err)
			}
		} else {
			// NATS is away (Connect warned): the hook subscribes once it is back.
			s.Go("control-subscribe", func(ctx context.Context) error {
				wait := natsconn.ReconnectWait
				for s.subscribeControl(ctx, nc) != nil {
					if clock.Sleep(ctx, wait) != nil {
						return nil
					}
					wait = min(2*wait, 2*time.Second)
				}
				return nil
			})
		}
		// NATS is no readiness check: every replica shares it, so an outage would take all
		// of them out at once, though it carries only events (held in the outboxes until it
		// returns) and control messages. The gauge and the disconnect and reconnect log
		// lines tell an operator instead.
		if err := observeNATS(s.Telemetry.MeterProvider, nc); err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: nats metrics: %w", cfg.Name, err)
		}
	}
	s.grpc = grpcserver.New(grpcserver.Options{
		Logger:       s.Log,
		Telemetry:    s.Telemetry,
		Interceptors: []grpc.UnaryServerInterceptor{s.Control.UnaryServerInterceptor()},
	})
	return s, nil
}

// subscribeControl subscribes the control hook on nc, confirmed by the server within 5s,
// and unsubscribes it when the process closes.
func (s *Server) subscribeControl(ctx context.Context, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stop, err := s.Control.Subscribe(ctx, nc)
	if err != nil {
		return err
	}
	s.onClose(func(context.Context) error { stop(); return nil })
	return nil
}

// GRPC is the process's gRPC server, for registering services before Run.
func (s *Server) GRPC() *grpc.Server { return s.grpc.GRPC() }

// OpenDB opens this component's database (DATABASE_URL, or a SQLite file under DATA_DIR),
// waiting up to sqldb.StartWait for a PostgreSQL that does not answer yet, applies its
// migrations, adds a readiness check and closes it with the process.
func (s *Server) OpenDB(ctx context.Context, migrations fs.FS) (*sqldb.DB, error) {
	db, err := sqldb.Open(ctx, sqldb.Options{URL: s.Config.DatabaseURL, Service: s.Config.Name, DataDir: s.Config.DataDir,
		Wait: sqldb.StartWait, Log: s.Log})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	s.onClose(func(context.Context) error { return db.Close() })
	if migrations != nil {
		if err := db.Migrate(ctx, migrations); err != nil {
			return nil, fmt.Errorf("migrate database: %w", err)
		}
	}
	s.Health.Add("db", db.PingContext)
	return db, nil
}

// Redis connects to REDIS_URL, or resolves a local store as the all-in-one mode does, adds a
// readiness check and closes it with the process.
func (s *Server) Redis(ctx context.Context) (redis.UniversalClient, error) {
	return s.redis(ctx, false)
}

// RedisAllowDown is Redis for a component that keeps serving while Redis is down (the
// gateway's limiter falls back): a REDIS_URL that does not answer is a warning rather than
// an error (redisconn.Options.AllowDown), and no readiness check is added, since a store
// every replica shares would take them all out of the balancer at once.
func (s *Server) RedisAllowDown(ctx context.Context) (redis.UniversalClient, error) {
	return s.redis(ctx, true)
}

func (s *Server) redis(ctx context.Context, allowDown bool) (redis.UniversalClient, error) {
	res, err := redisconn.Resolve(ctx, redisconn.Options{URL: s.Config.RedisURL, DataDir: filepath.Join(s.Config.DataDir, "redis-"+s.Config.Name),
		Log: s.Log, AllowDown: allowDown})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	s.onClose(func(context.Context) error { return res.Close() })
	if !allowDown {
		s.Health.Add("redis", func(ctx context.Context) error { return res.Client.Ping(ctx).Err() })
	}
	return res.Client, nil
}

// Run serves HTTP (h behind the control hook and telemetry, next to the platform endpoints)
// and gRPC when GRPC_ADDR is set, until ctx is done or a worker fails; then it drains and
// stops the workers (see Serve).
func (s *Server) Run(ctx context.Context, h http.Handler) error {
	hl, err := net.Listen("tcp", s.Config.HTTPAddr)
	if err != nil {
		return fmt.Errorf("%s: listen http: %w", s.Config.Name, err)
	}
	var gl net.Listener
	if s.Config.GRPCAddr != "" {
		if gl, err = net.Listen("tcp", s.Config.GRPCAddr); err != nil {
			hl.Close()
			return fmt.Errorf("%s: listen grpc: %w", s.Config.Name, err)
		}
	}
	return s.Serve(ctx, h, hl, gl)
}

// Serve is Run on listeners the caller opened (tests pass 127.0.0.1:0); gl may be nil.
// Shutdown begins when ctx is done or a worker fails (see Go): readiness fails first and the
// listeners stay open for DRAIN_DELAY (at most half of SHUTDOWN_TIMEOUT), so balancers stop
// sending before connections are refused (docs/architecture.md); then they drain and the
// workers stop, within SHUTDOWN_TIMEOUT less the fifth kept for Close. A listener that fails
// skips the delay.
func (s *Server) Serve(ctx context.Context, h http.Handler, hl, gl net.Listener) error {
	attrs := []any{"http", hl.Addr().String()}
	if gl != nil {
		attrs = append(attrs, "grpc", gl.Addr().String())
	}
	s.mu.Lock()
	internal := s.internal
	s.mu.Unlock()
	for _, il := range internal {
		attrs = append(attrs, il.name, il.l.Addr().String())
	}
	s.Log.InfoContext(ctx, "serving", attrs...)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.work.failed:
			cancel()
		case <-ctx.Done():
		}
	}()

	// The listeners stop on their own context, ended after the drain delay, not on ctx.
	listening, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListening()
	delay := min(s.drainDelay, s.Config.ShutdownTimeout/2)
	drain := s.Config.ShutdownTimeout - s.closeReserve() - delay
	g, gctx := errgroup.WithContext(listening)
	srv := httpserver.New(s.Handler(h))
	g.Go(func() error { return httpserver.Serve(gctx, srv, hl, drain) })
	if gl != nil {
		g.Go(func() error { return s.grpc.Serve(gctx, gl, drain) })
	}
	for _, il := range internal {
		g.Go(func() error { return httpserver.Serve(gctx, httpserver.New(il.h), il.l, drain) })
	}
	select {
	case <-ctx.Done():
	case <-gctx.Done():
	}
	stopBy := s.stopDeadline()
	s.Health.SetDraining()
	if delay > 0 && gctx.Err() == nil {
		s.Log.Info("draining: not ready, still serving", "for", delay.String())
		wait := time.NewTimer(delay)
		select {
		case <-wait.C:
		case <-gctx.Done():
		}
		wait.Stop()
	}
	stopListening()
	workers, cancelWorkers := context.WithDeadline(context.WithoutCancel(ctx), stopBy.Add(-s.closeReserve()))
	defer cancelWorkers()
	err := errors.Join(g.Wait(), s.work.stop(workers))
	s.Log.Info("stopped", "error", err)
	return err
}

// Handler is the process's whole HTTP surface: platform endpoints plus h. The control hook
// wraps only h, so injected faults never make a health probe lie. Requests for h carry at
// most httpserver.DefaultMaxBodyBytes and are refused with 400 when their path, query or
// Idempotency-Key holds invalid UTF-8 or a control character (httpserver.RefuseBadText
// says which; a query value may hold tabs and line breaks). An edge component's surface is h and the health endpoints
// alone, without those two checks (Spec.Edge).
func (s *Server) Handler(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", s.Health.LiveHandler())
	mux.Handle("GET /readyz", s.Health.ReadyHandler())
	if !s.edge {
		mux.Handle("GET /metrics", s.Telemetry.MetricsHandler())
		mux.Handle(control.Path, s.Control.Handler())
	}
	if h == nil {
		return mux
	}
	app := s.Control.Middleware(h)
	if !s.edge {
		app = httpserver.LimitBody(0)(httpserver.RefuseBadText(app))
	}
	instrument := s.Telemetry.HTTPMiddleware(s.Config.Name)
	if s.ownHTTPMetrics {
		instrument = s.Telemetry.HTTPTracing(s.Config.Name, s.traceFrom)
	}
	app = instrument(app)
	if !s.edge {
		mux.Handle("/", app)
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/healthz" || p == "/readyz" {
			mux.ServeHTTP(w, r)
			return
		}
		app.ServeHTTP(w, r)
	})
}

// Listen opens addr for h, served as it is on a listener of its own beside the process's
// HTTP and gRPC ones: an API the component keeps off its public listener (the gateway's
// admin API). It opens at once, so an address already taken fails the build, and Run serves
// it with the others and drains it with them at shutdown. name labels it in the log.
// It returns the address listened on (addr may end in :0).
func (s *Server) Listen(name, addr string, h http.Handler) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", name, err)
	}
	s.mu.Lock()
	s.internal = append(s.internal, internalListener{name: name, l: l, h: h})
	s.mu.Unlock()
	// Serve closes it on its way out; this closes it when Serve never ran (a build failed).
	s.OnClose(func() error {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("close %s listener: %w", name, err)
		}
		return nil
	})
	return l.Addr(), nil
}

// internalListener is one listener opened by Listen.
type internalListener struct {
	name string
	l    net.Listener
	h    http.Handler
}

// ContinueTracesFrom says whose trace context (traceparent) the routes of a component that
// records its own HTTP metrics (Spec.OwnHTTPMetrics: the gateway) continue: f reports
// whether r came through a hop the component trusts. Any other request starts a trace of its
// own, linked to the one it named (telemetry.HTTPTracing). Call it from the Build, before the
// routes are served; without it every caller's trace context is continued.
func (s *Server) ContinueTracesFrom(f func(r *http.Request) bool) { s.traceFrom = f }

// OnClose registers f to run when the process closes, after its listeners and workers have
// stopped: for what a Build opened itself, a gRPC client connection, say. Like what the
// Server opened, it is closed newest first. f should return promptly: the process must have
// stopped by SHUTDOWN_TIMEOUT.
func (s *Server) OnClose(f func() error) { s.onClose(func(context.Context) error { return f() }) }

// onClose registers f, whose ctx ends at the shutdown deadline: what may block (a flush, a
// drain) gives up then.
func (s *Server) onClose(f func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closers = append(s.closers, f)
}

// Close stops the workers Run has not stopped (when building failed, say), then releases
// what the Server opened, newest first, all within SHUTDOWN_TIMEOUT of the start of
// shutdown (Serve's, or this call's when Serve did not run): after Serve the workers are not
// waited for again, and what a closer waits for (the telemetry flush, the NATS drain) is
// given up at the deadline. Safe to call more than once.
func (s *Server) Close() error {
	stopBy := s.stopDeadline()
	workers, cancel := context.WithDeadline(context.Background(), stopBy.Add(-s.closeReserve()))
	workErr := s.work.stop(workers)
	cancel()
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), stopBy)
	defer cancel()
	errs := []error{workErr}
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i](ctx))
	}
	return errors.Join(errs...)
}

// stopDeadline returns when the process must have stopped: SHUTDOWN_TIMEOUT after its first
// call, which marks the start of shutdown. Serve and Close share it, so a stop that ran
// late in one does not get a fresh SHUTDOWN_TIMEOUT in the other: an orchestrator sized
// its grace period for one.
func (s *Server) stopDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopBy.IsZero() {
		s.stopBy = s.now().Add(s.Config.ShutdownTimeout)
	}
	return s.stopBy
}

// closeReserve is the part of SHUTDOWN_TIMEOUT, a fifth (2s of the default 10s), kept for
// Close after the listeners and the workers, which stop within the rest: a request or a
// worker that ignores the stop must not use up the time to flush the last spans and drain
// NATS before the orchestrator kills the process. The cost is a drain that much shorter.
func (s *Server) closeReserve() time.Duration { return s.Config.ShutdownTimeout / 5 }

// drainNATS drains nc and waits until it has closed or ctx ends, closing it then. Drain only
// starts the drain (unsubscribe, let the handlers finish, flush what was published): a
// process that exits on its return can lose the messages it published last.
func drainNATS(ctx context.Context, nc *nats.Conn) error {
	closed := make(chan struct{})
	var once sync.Once
	prev := nc.ClosedHandler()
	nc.SetClosedHandler(func(c *nats.Conn) {
		if prev != nil {
			prev(c)
		}
		once.Do(func() { close(closed) })
	})
	if nc.Drain() != nil {
		// Closed already, or reconnecting, when Drain closes it at once: no server to flush to.
		nc.Close()
		return nil
	}
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
		nc.Close()
		return fmt.Errorf("nats drain: %w", ctx.Err())
	}
}

// observeNATS reports nc's state as the gauge nats_connected: 1 while connected, 0 while
// the client is reconnecting.
func observeNATS(mp metric.MeterProvider, nc *nats.Conn) error {
	_, err := mp.Meter("boxoffice.dev/platform/server").Int64ObservableGauge("nats.connected",
		metric.WithDescription("1 while the process is connected to NATS, 0 while it is reconnecting."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			var v int64
			if nc.IsConnected() {
				v = 1
			}
			o.Observe(v)
			return nil
		}))
	return err
}

// DefaultDrainDelay is how long a process stays open after its readiness fails, unless
// DRAIN_DELAY says otherwise: a little more than the gateway's two-second probe interval,
// so that a probe has seen the failure before connections are refused (a refused probe or
// request then takes the instance out at once, see gateway/upstream). The cost is as much
// time added to every stop.
const DefaultDrainDelay = 3 * time.Second

// readDrainDelay reads DRAIN_DELAY, a duration that may be 0 (close the listeners as soon
// as readiness fails: for tests, or where no balancer probes the process).
func readDrainDelay(r *config.Reader) time.Duration {
	v := r.String("DRAIN_DELAY", DefaultDrainDelay.String())
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		r.Fail("DRAIN_DELAY", v, "a duration such as 0s or 3s")
		return DefaultDrainDelay
	}
	return d
}
