package grpcclient

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/testkit"
)

// healthService answers Check by the service name asked: "" is serving, "slow" waits for the
// caller to give up, "missing" and "broken" fail.
type healthService struct {
	healthpb.UnimplementedHealthServer
}

var _ healthpb.HealthServer = (*healthService)(nil)

func (healthService) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	switch req.GetService() {
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	case "missing":
		return nil, status.Error(codes.NotFound, "no such service")
	case "broken":
		return nil, status.Error(codes.Internal, "database password rejected")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// serve runs a gRPC server with healthService on a loopback port until the test ends.
func serve(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, healthService{})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// dial is Dial that fails the test on error and closes the connection when it ends.
func dial(t *testing.T, addr string, o Options) *grpc.ClientConn {
	t.Helper()
	conn, err := Dial(addr, o)
	if err != nil {
		t.Fatalf("Dial(%s) = %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestDialMapsErrorsToProblems(t *testing.T) {
	addr := serve(t)
	client := healthpb.NewHealthClient(dial(t, addr, Options{Service: "catalog", Timeout: 100 * time.Millisecond}))
	for _, tc := range []struct {
		service  string
		wantCode problem.Code
		wantGRPC codes.Code
		wantMsg  string // the text a client would see, for problems
	}{
		{"", "", codes.OK, ""},
		{"missing", problem.NotFound, codes.NotFound, "no such service"},
		{"slow", problem.Unavailable, codes.DeadlineExceeded, "catalog is unavailable"},
		{"broken", problem.Internal, codes.Internal, ""},
	} {
		t.Run(tc.service, func(t *testing.T) {
			start := time.Now()
			_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{Service: tc.service})
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Check(%q) took %v, want the 100ms call timeout to end it", tc.service, took)
			}
			if tc.wantGRPC == codes.OK {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", tc.service, err)
				}
				return
			}
			if got := problem.CodeOf(err); got != tc.wantCode {
				t.Errorf("CodeOf(Check(%q)) = %q, want %q (err %v)", tc.service, got, tc.wantCode, err)
			}
			if got := status.Code(err); got != tc.wantGRPC {
				t.Errorf("status.Code(Check(%q)) = %v, want %v: the status stays wrapped", tc.service, got, tc.wantGRPC)
			}
			if p, ok := err.(*problem.Error); ok && p.Message != tc.wantMsg {
				t.Errorf("Check(%q) message = %q, want %q", tc.service, p.Message, tc.wantMsg)
			}
			if tc.wantCode == problem.Internal && !strings.Contains(err.Error(), "catalog") {
				t.Errorf("Check(%q) = %v, want the service named for the log", tc.service, err)
			}
		})
	}
}

func TestDialKeepsAnEarlierCallerDeadline(t *testing.T) {
	client := healthpb.NewHealthClient(dial(t, serve(t), Options{Timeout: time.Minute}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "slow"})
	if took := time.Since(start); took > 5*time.Second || problem.CodeOf(err) != problem.Unavailable {
		t.Errorf("Check(slow) with a 50ms deadline = %v after %v, want unavailable within the caller's deadline", err, took)
	}
}

func TestDialToNobodyIsUnavailableWithoutTheAddress(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	client := healthpb.NewHealthClient(dial(t, addr, Options{Service: "assistant", Timeout: 2 * time.Second}))
	_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	p, ok := err.(*problem.Error)
	if !ok || p.Code != problem.Unavailable || p.Message != "assistant is unavailable" {
		t.Fatalf("Check on a closed port = %#v, want problem unavailable \"assistant is unavailable\"", err)
	}
}

func TestReady(t *testing.T) {
	live := dial(t, serve(t), Options{})
	down := dial(t, "127.0.0.1:"+strconv.Itoa(testkit.FreePort(t)), Options{})
	closed, err := Dial(serve(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = closed.Close()
	for _, tc := range []struct {
		name    string
		conn    *grpc.ClientConn
		wantErr bool
	}{
		{"live", live, false},
		{"nobody listening", down, true},
		{"closed", closed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := Ready(tc.conn)(ctx); (err != nil) != tc.wantErr {
				t.Errorf("Ready(%s) = %v, want error %v", tc.name, err, tc.wantErr)
			}
		})
	}
}
