package grpcserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/testkit"
)

// probeService is a tiny service registered by hand, so the tests need no generated code.
// Echo answers its input, Panic panics, Block waits for the test to release it.
const probeService = "boxoffice.test.Probe"

type probe struct {
	entered chan struct{} // receives once per Block call that started
	release chan struct{} // closed to let Block calls return
}

func newProbe() *probe {
	return &probe{entered: make(chan struct{}, 8), release: make(chan struct{})}
}

func (p *probe) desc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: probeService,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			unary("Echo", func(_ context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
				return in, nil
			}),
			unary("Panic", func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
				var seats []string
				_ = seats[3] // a real bug: index out of range
				return nil, nil
			}),
			unary("Block", func(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
				p.entered <- struct{}{}
				select {
				case <-p.release:
					return in, nil
				case <-ctx.Done():
					return nil, status.FromContextError(ctx.Err()).Err()
				}
			}),
		},
	}
}

// unary adapts a typed function to a grpc.MethodDesc, as generated code would.
func unary(name string, fn func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			call := func(ctx context.Context, req any) (any, error) { return fn(ctx, req.(*wrapperspb.StringValue)) }
			if ic == nil {
				return call(ctx, in)
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + probeService + "/" + name}, call)
		},
	}
}

// logBuffer collects log lines written from server goroutines.
type logBuffer struct{ testkit.Buffer }

// lines returns the decoded log lines whose msg is msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("decode log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// running is a Server serving on a loopback port, with a client connection to it.
type running struct {
	*Server
	probe *probe
	conn  *grpc.ClientConn
	stop  context.CancelFunc
	done  chan struct{} // closed when Serve returned
	err   error         // what Serve returned; read after done
}

// wait blocks until Serve returns and gives its result.
func (r *running) wait() error {
	<-r.done
	return r.err
}

// start serves a Server built from o, with the probe service registered after New (as
// services do), until the test ends or stop is called.
func start(t *testing.T, o Options, drain time.Duration) *running {
	t.Helper()
	s := New(o)
	p := newProbe()
	s.GRPC().RegisterService(p.desc(), struct{}{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Server: s, probe: p, stop: cancel, done: make(chan struct{})}
	go func() {
		r.err = s.Serve(ctx, l, drain)
		close(r.done)
	}()

	r.conn, err = grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.release:
		default:
			close(p.release)
		}
		_ = r.conn.Close()
		<-r.done
	})
	return r
}

func (r *running) call(ctx context.Context, method, in string) (string, error) {
	out := new(wrapperspb.StringValue)
	err := r.conn.Invoke(ctx, "/"+probeService+"/"+method, wrapperspb.String(in), out)
	return out.GetValue(), err
}

func (r *running) check(t *testing.T, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(r.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("Check(%q): %v", service, err)
	}
	return resp.GetStatus()
}

func TestSetServing(t *testing.T) {
	r := start(t, Options{}, time.Second)
	const (
		serving    = healthpb.HealthCheckResponse_SERVING
		notServing = healthpb.HealthCheckResponse_NOT_SERVING
	)
	steps := []struct {
		name string
		set  *bool // nil: as Serve left it
		want healthpb.HealthCheckResponse_ServingStatus
	}{
		{"after Serve", nil, serving},
		{"SetServing(false)", new(false), notServing},
		{"SetServing(true)", new(true), serving},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.set != nil {
				r.SetServing(*step.set)
			}
			for _, service := range []string{"", probeService, healthpb.Health_ServiceDesc.ServiceName} {
				if got := r.check(t, service); got != step.want {
					t.Errorf("Check(%q) = %v, want %v", service, got, step.want)
				}
			}
		})
	}
}

func TestPanicIsInternal(t *testing.T) {
	var logs logBuffer
	r := start(t, Options{Logger: logging.New(&logs, slog.LevelInfo, "test")}, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	for i := range 2 { // the second panic proves the first did not take the server down
		_, err := r.call(ctx, "Panic", "x")
		if got := status.Code(err); got != codes.Internal {
			t.Fatalf("call %d: Panic code = %v, want Internal (err %v)", i, got, err)
		}
		if msg := status.Convert(err).Message(); strings.Contains(msg, "nil map") {
			t.Errorf("call %d: Panic message %q exposes the panic, want a generic message", i, msg)
		}
	}
	if got, err := r.call(ctx, "Echo", "still here"); err != nil || got != "still here" {
		t.Errorf("Echo after panics = %q, %v, want %q, nil", got, err, "still here")
	}

	panics := logs.lines(t, "grpc handler panicked")
	if len(panics) != 2 {
		t.Fatalf("logged %d panics, want 2", len(panics))
	}
	if got := panics[0]["method"]; got != "/"+probeService+"/Panic" {
		t.Errorf("panic log method = %v, want /%s/Panic", got, probeService)
	}
	if stack, _ := panics[0]["stack"].(string); !strings.Contains(stack, "grpcserver_test.go") {
		t.Errorf("panic log stack does not show the panicking handler:\n%s", stack)
	}
	calls := logs.lines(t, "grpc call")
	if len(calls) != 2 || calls[0]["code"] != "Internal" || calls[0]["level"] != "ERROR" {
		t.Errorf("call log lines = %v, want two Internal lines at ERROR (OK is below info)", calls)
	}
}

func TestServeDrainsInFlight(t *testing.T) {
	r := start(t, Options{}, 10*time.Second)
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := r.call(context.Background(), "Block", "in flight")
		done <- result{out, err}
	}()
	<-r.probe.entered

	r.stop()
	// testkit would be the usual poller, but it imports server, which imports this package.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := r.health.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("health NOT_SERVING while draining: not true within 5s")
		}
	}
	select {
	case <-r.done:
		t.Fatalf("Serve returned %v while a call was in flight, want it to wait", r.err)
	default:
	}

	close(r.probe.release)
	if res := <-done; res.err != nil || res.out != "in flight" {
		t.Errorf("in-flight Block = %q, %v, want %q, nil", res.out, res.err, "in flight")
	}
	if err := r.wait(); err != nil {
		t.Errorf("Serve after a drained stop = %v, want nil", err)
	}
}

func TestServeDrainDeadline(t *testing.T) {
	const drain = 100 * time.Millisecond
	r := start(t, Options{}, drain)
	errc := make(chan error, 1)
	go func() {
		_, err := r.call(context.Background(), "Block", "stuck")
		errc <- err
	}()
	<-r.probe.entered

	r.stop()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("Serve after the drain deadline = %v, want nil", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Serve still running 10s after a %v drain deadline", drain)
	}
	if got := status.Code(<-errc); got != codes.Unavailable {
		t.Errorf("call cut at the drain deadline: code = %v, want Unavailable", got)
	}
}

// TestServeReturns covers the stops that need no call in flight.
func TestServeReturns(t *testing.T) {
	tests := []struct {
		name      string
		cancelCtx bool  // ctx done before Serve starts
		closeL    bool  // listener already closed
		wantErr   error // nil: Serve returns nil
	}{
		{"ctx done before start", true, false, nil},
		{"listener closed", false, true, net.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if tc.closeL {
				_ = l.Close()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelCtx {
				cancel()
			}
			err = New(Options{}).Serve(ctx, l, time.Second)
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("Serve = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestReflectionListsServices(t *testing.T) {
	r := start(t, Options{}, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(r.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		got = append(got, s.GetName())
	}
	for _, want := range []string{"grpc.health.v1.Health", probeService} {
		if !slices.Contains(got, want) {
			t.Errorf("reflection lists %v, want it to include %s", got, want)
		}
	}
}

func TestInterceptorsRunInsideBuiltins(t *testing.T) {
	deny := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return nil, status.Error(codes.PermissionDenied, "capacity knob says no")
	}
	explode := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		panic("control hook bug")
	}
	tests := []struct {
		name      string
		extra     grpc.UnaryServerInterceptor
		wantCode  codes.Code
		wantLevel string // of the call's log line
	}{
		{"extra interceptor's error is logged", deny, codes.PermissionDenied, "INFO"},
		{"extra interceptor's panic is recovered", explode, codes.Internal, "ERROR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			r := start(t, Options{
				Logger:       logging.New(&logs, slog.LevelDebug, "test"),
				Interceptors: []grpc.UnaryServerInterceptor{tc.extra},
			}, time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := r.call(ctx, "Echo", "x")
			if got := status.Code(err); got != tc.wantCode {
				t.Fatalf("Echo code = %v, want %v (err %v)", got, tc.wantCode, err)
			}
			var line map[string]any
			for _, l := range logs.lines(t, "grpc call") {
				if l["method"] == "/"+probeService+"/Echo" {
					line = l
				}
			}
			if line == nil {
				t.Fatalf("no call log line for Echo")
			}
			if line["code"] != tc.wantCode.String() || line["level"] != tc.wantLevel {
				t.Errorf("Echo log line code, level = %v, %v, want %v, %s", line["code"], line["level"], tc.wantCode, tc.wantLevel)
			}
		})
	}
}

func TestCallLogLevels(t *testing.T) {
	tests := []struct {
		code codes.Code
		want slog.Level
	}{
		{codes.OK, slog.LevelDebug},
		{codes.InvalidArgument, slog.LevelInfo},
		{codes.NotFound, slog.LevelInfo},
		{codes.PermissionDenied, slog.LevelInfo},
		{codes.Canceled, slog.LevelInfo},
		{codes.ResourceExhausted, slog.LevelWarn},
		{codes.Unavailable, slog.LevelWarn},
		{codes.DeadlineExceeded, slog.LevelWarn},
		{codes.Internal, slog.LevelError},
		{codes.Unknown, slog.LevelError},
		{codes.Unimplemented, slog.LevelError},
	}
	for _, tc := range tests {
		t.Run(tc.code.String(), func(t *testing.T) {
			if got := levelOf(tc.code); got != tc.want {
				t.Errorf("levelOf(%v) = %v, want %v", tc.code, got, tc.want)
			}
		})
	}
}

// TestCallLogDuration checks the call line against an injected clock: the duration logged is
// the clock's, and an OK call is logged at debug only.
func TestCallLogDuration(t *testing.T) {
	var logs logBuffer
	s := New(Options{Logger: logging.New(&logs, slog.LevelDebug, "test")})
	var mu sync.Mutex
	clock := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	s.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(250 * time.Millisecond) // each reading advances a quarter second
		return clock
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/boxoffice.test.Probe/Echo"}
	if _, err := s.logUnary(context.Background(), nil, info, func(context.Context, any) (any, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	lines := logs.lines(t, "grpc call")
	if len(lines) != 1 {
		t.Fatalf("logged %d call lines, want 1", len(lines))
	}
	want := map[string]any{
		"level": "DEBUG", "method": info.FullMethod, "code": "OK",
		"duration": float64(250 * time.Millisecond), "service": "test",
	}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("call line %s = %v, want %v", k, lines[0][k], v)
		}
	}
}
