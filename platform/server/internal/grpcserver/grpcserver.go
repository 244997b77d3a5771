// Package grpcserver is the gRPC server every BoxOffice service runs for the BFFs and for
// service-to-service calls, with the parts each of them would otherwise rebuild:
//
//   - the standard health service (grpc.health.v1.Health), NOT_SERVING while it drains;
//   - server reflection, so grpcurl and Postman can call methods without the .proto files;
//   - a recovery interceptor: a panic fails that call with codes.Internal and a logged
//     stack, instead of killing the process and every other call in flight;
//   - a logging interceptor: one line per call with method, status code and duration;
//   - a text check (checkTextUnary);
//   - graceful shutdown within the drain deadline.
//
// It is internal to package server: every process built with server.New has one, and
// services register on it through Server.GRPC.
package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/telemetry"
)

// Options configures New. The zero value is a working server without instrumentation or logs.
type Options struct {
	Logger       *slog.Logger                  // nil = discard
	Telemetry    *telemetry.Telemetry          // nil = no instrumentation
	Interceptors []grpc.UnaryServerInterceptor // extra, run after the built-in ones (e.g. the control hook)
}

// Server is a *grpc.Server with health, reflection, recovery and call logging. Register
// services on GRPC() before Serve. Its methods are safe for concurrent use.
type Server struct {
	grpc   *grpc.Server
	health *health.Server
	log    *slog.Logger
	now    func() time.Time // call durations; time.Now unless a test swaps it

	mu      sync.Mutex
	serving bool // the status SetServing last asked for; true until told otherwise
}

// New builds the server. Interceptors run in this order, outermost first: logging (so it sees
// the final code, including the Internal of a recovered panic), recovery (so a panic in an
// extra interceptor is caught too), the text check (checkTextUnary), then o.Interceptors,
// then the handler.
func New(o Options) *Server {
	s := &Server{health: health.NewServer(), log: o.Logger, now: time.Now, serving: true}
	if s.log == nil {
		s.log = logging.Discard()
	}
	unary := append([]grpc.UnaryServerInterceptor{s.logUnary, s.recoverUnary, checkTextUnary}, o.Interceptors...)
	s.grpc = grpc.NewServer(
		o.Telemetry.GRPCServerOption(), // first, so the span is in ctx for the log lines
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(s.logStream, s.recoverStream),
	)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s
}

// GRPC returns the underlying server, to register services on.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// SetServing sets the health status of the server ("") and of every registered service.
// Services registered later get the current status when Serve starts.
func (s *Server) SetServing(serving bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving = serving
	s.applyLocked()
}

func (s *Server) applyLocked() {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if s.serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", st)
	for name := range s.grpc.GetServiceInfo() {
		s.health.SetServingStatus(name, st)
	}
}

// Serve accepts calls on l until ctx is done. Then it reports NOT_SERVING, refuses new calls
// and waits for the ones in flight; when drain passes first (drain <= 0: at once), it closes
// the remaining calls, which fail with codes.Unavailable. It returns nil after such a stop and
// the error when the listener fails. Serve closes l.
func (s *Server) Serve(ctx context.Context, l net.Listener, drain time.Duration) error {
	s.mu.Lock()
	s.applyLocked()
	s.mu.Unlock()

	served := make(chan error, 1)
	go func() { served <- s.grpc.Serve(l) }()
	select {
	case err := <-served:
		if err == nil { // stopped through GRPC().Stop
			return nil
		}
		return fmt.Errorf("grpc serve on %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}

	// Shutdown, unlike SetServing(false), also ignores later SetServing(true) calls: a
	// readiness loop still running must not announce a server that is going away.
	s.mu.Lock()
	s.serving = false
	s.health.Shutdown()
	s.mu.Unlock()

	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	deadline := time.NewTimer(drain)
	defer deadline.Stop()
	select {
	case <-stopped:
	case <-deadline.C:
		s.log.WarnContext(ctx, "grpc drain deadline passed, closing calls still in flight", "drain", drain)
		s.grpc.Stop()
		<-stopped
	}
	// Serve returns nil after a stop, or ErrServerStopped when the stop came before it started.
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("grpc serve on %s: %w", l.Addr(), err)
	}
	return nil
}

func (s *Server) logUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := s.now()
	resp, err := handler(ctx, req)
	s.logCall(ctx, info.FullMethod, start, err)
	return resp, err
}

func (s *Server) logStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := s.now()
	err := handler(srv, ss)
	s.logCall(ss.Context(), info.FullMethod, start, err)
	return err
}

// logCall writes one line per call, at a level that says whose problem a failure is.
func (s *Server) logCall(ctx context.Context, method string, start time.Time, err error) {
	code := status.Code(err)
	level := levelOf(code)
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("code", code.String()),
		slog.Duration("duration", s.now().Sub(start)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	s.log.LogAttrs(ctx, level, "grpc call", attrs...)
}

// levelOf maps a status code to a log level. OK is debug: at info, a busy service would log
// every call. A bug on our side is an error, an overload or timeout a warning, and a caller's
// mistake (bad argument, not found, denied) info: it is worth seeing, not worth paging for.
func levelOf(code codes.Code) slog.Level {
	switch code {
	case codes.OK:
		return slog.LevelDebug
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unimplemented:
		return slog.LevelError
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return slog.LevelWarn
	default:
		return slog.LevelInfo
	}
}

func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer s.recoverCall(ctx, info.FullMethod, &err)
	return handler(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer s.recoverCall(ss.Context(), info.FullMethod, &err)
	return handler(srv, ss)
}

// recoverCall, deferred, turns a panic into codes.Internal. The caller gets a generic message:
// the panic value may hold internals (a query, a key) that belong in the log only.
func (s *Server) recoverCall(ctx context.Context, method string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	s.log.ErrorContext(ctx, "grpc handler panicked", "method", method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	*err = status.Error(codes.Internal, "internal error")
}
