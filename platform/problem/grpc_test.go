package problem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// allCodes lists every Code by hand, so a code added to the tables but not here fails
// TestGRPCRoundTrip instead of going untested.
var allCodes = []Code{Invalid, Unauthorized, Forbidden, NotFound, Conflict, Gone, Unprocessable, UnsupportedMediaType, TooMany, Unavailable, Internal}

// failingHealth answers Check with GRPC of the error named by the service asked for, as a
// service's handler answers with its domain's problem. errs is read-only once serving.
type failingHealth struct {
	healthpb.UnimplementedHealthServer
	errs map[string]error
}

var _ healthpb.HealthServer = (*failingHealth)(nil)

func (h failingHealth) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, GRPC(h.errs[req.GetService()])
}

// serveErrors runs failingHealth over loopback TCP until the test ends and returns a client.
func serveErrors(t *testing.T, errs map[string]error) healthpb.HealthClient {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, failingHealth{errs: errs})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// A problem sent with GRPC comes back from FromGRPC with its code, field and message, both
// through the functions and over a real connection; the status keeps the code and the
// "field: message" text that clients reading only the message know.
func TestGRPCRoundTrip(t *testing.T) {
	if len(allCodes) != len(httpStatus) || len(allCodes) != len(grpcCode) {
		t.Fatalf("allCodes has %d codes, the tables %d and %d: list the new code", len(allCodes), len(httpStatus), len(grpcCode))
	}
	type roundTrip struct {
		name    string
		err     error
		want    *Error // nil: a plain error, CodeOf Internal
		wantMsg string // the status message
	}
	var tests []roundTrip
	for _, code := range allCodes {
		if code == Internal {
			continue
		}
		tests = append(tests,
			roundTrip{string(code), New(code, "no such hold of yours"), &Error{Code: code, Message: "no such hold of yours"}, "no such hold of yours"},
			roundTrip{string(code) + " with field", &Error{Code: code, Field: "hold_id", Message: "no such hold of yours"},
				&Error{Code: code, Field: "hold_id", Message: "no such hold of yours"}, "hold_id: no such hold of yours"})
	}
	tests = append(tests,
		roundTrip{"wrapped, a field with an index", fmt.Errorf("place hold: %w", InvalidField("seats[0]", "want a seat id such as A-3-12")),
			&Error{Code: Invalid, Field: "seats[0]", Message: "want a seat id such as A-3-12"}, "seats[0]: want a seat id such as A-3-12"},
		roundTrip{"message that starts like a field", New(Unprocessable, "hold_id: is what it says"),
			&Error{Code: Unprocessable, Message: "hold_id: is what it says"}, "hold_id: is what it says"},
		roundTrip{"internal problem", &Error{Code: Internal, Message: "disk on fire", Err: errors.New("secret dsn")}, nil, "internal error"},
		roundTrip{"plain error", errors.New("secret dsn"), nil, "internal error"},
	)

	errs := make(map[string]error, len(tests))
	for _, tt := range tests {
		errs[tt.name] = tt.err
	}
	client := serveErrors(t, errs)

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, wireErr := client.Check(ctx, &healthpb.HealthCheckRequest{Service: tt.name})
			for _, via := range []struct {
				name string
				err  error
			}{{"function", GRPC(tt.err)}, {"wire", wireErr}} {
				wantCode := codes.Internal
				if tt.want != nil {
					wantCode = grpcCode[tt.want.Code]
				}
				st := status.Convert(via.err)
				if st.Code() != wantCode || st.Message() != tt.wantMsg {
					t.Errorf("%s: status = %v %q, want %v %q", via.name, st.Code(), st.Message(), wantCode, tt.wantMsg)
				}
				if got, want := errorInfo(st), wantErrorInfo(tt.want); got != want {
					t.Errorf("%s: ErrorInfo = %q, want %q", via.name, got, want)
				}
				back := FromGRPC(via.err)
				if tt.want == nil {
					if _, ok := errors.AsType[*Error](back); ok || CodeOf(back) != Internal || strings.Contains(back.Error(), "secret") {
						t.Errorf("%s: FromGRPC(%v) = %v, want a plain internal error without the cause", via.name, via.err, back)
					}
					continue
				}
				got, ok := back.(*Error)
				if !ok {
					t.Fatalf("%s: FromGRPC(%v) = %T %v, want *Error", via.name, via.err, back, back)
				}
				if got.Code != tt.want.Code || got.Field != tt.want.Field || got.Message != tt.want.Message {
					t.Errorf("%s: FromGRPC = %s field %q message %q, want %s field %q message %q",
						via.name, got.Code, got.Field, got.Message, tt.want.Code, tt.want.Field, tt.want.Message)
				}
				if status.Code(got) != wantCode {
					t.Errorf("%s: status.Code(FromGRPC(...)) = %v, want %v (the status stays wrapped)", via.name, status.Code(got), wantCode)
				}
			}
		})
	}
}

// errorInfo describes st's ErrorInfo details as "domain/reason/field", the contract a
// client in another language reads; "" when there are none.
func errorInfo(st *status.Status) string {
	var infos []string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			infos = append(infos, info.GetDomain()+"/"+info.GetReason()+"/"+info.GetMetadata()["field"])
		}
	}
	return strings.Join(infos, ", ")
}

// wantErrorInfo is errorInfo of the status GRPC makes of e: none for an internal error.
func wantErrorInfo(e *Error) string {
	if e == nil {
		return ""
	}
	return "boxoffice.dev/" + string(e.Code) + "/" + e.Field
}

// withDetails is status.New(code, msg) carrying details, failing the test if they do not marshal.
func withDetails(t *testing.T, code codes.Code, msg string, details ...protoadapt.MessageV1) error {
	t.Helper()
	st, err := status.New(code, msg).WithDetails(details...)
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// A status GRPC did not make (no ErrorInfo of ErrorDomain, or one that does not agree with
// the status code) maps by its code alone, as every status did before details.
func TestFromGRPCWithoutOurDetails(t *testing.T) {
	notStatus := errors.New("connection reset")
	tests := []struct {
		name      string
		err       error
		wantCode  Code
		wantMsg   string // "" for a plain error
		wantField string
	}{
		{"plain failed precondition is gone", status.Error(codes.FailedPrecondition, "hold expired"), Gone, "hold expired", ""},
		{"plain invalid keeps its text whole", status.Error(codes.InvalidArgument, "seats: want 1 to 8"), Invalid, "seats: want 1 to 8", ""},
		{"plain already exists is conflict", status.Error(codes.AlreadyExists, "seat taken"), Conflict, "seat taken", ""},
		{"deadline is unavailable", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), Unavailable, "upstream timed out", ""},
		{"canceled is unavailable", status.Error(codes.Canceled, "context canceled"), Unavailable, "upstream timed out", ""},
		{"plain internal", status.Error(codes.Internal, "boom"), Internal, "", ""},
		{"unknown code", status.Error(codes.DataLoss, "boom"), Internal, "", ""},
		{"another domain's reason", withDetails(t, codes.FailedPrecondition, "hold_id: no such hold",
			&errdetails.ErrorInfo{Domain: "googleapis.com", Reason: "unprocessable", Metadata: map[string]string{fieldKey: "hold_id"}}),
			Gone, "hold_id: no such hold", ""},
		{"our domain, a reason that is no code", withDetails(t, codes.FailedPrecondition, "hold expired",
			&errdetails.ErrorInfo{Domain: ErrorDomain, Reason: "teapot"}), Gone, "hold expired", ""},
		{"our domain, a code the status code disagrees with", withDetails(t, codes.FailedPrecondition, "hold expired",
			&errdetails.ErrorInfo{Domain: ErrorDomain, Reason: string(NotFound)}), Gone, "hold expired", ""},
		{"our domain, internal is never a problem", withDetails(t, codes.Internal, "boom",
			&errdetails.ErrorInfo{Domain: ErrorDomain, Reason: string(Internal)}), Internal, "", ""},
		{"other details before ours are skipped", withDetails(t, codes.FailedPrecondition, "key: reused",
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "other", Description: "x"}}},
			&errdetails.ErrorInfo{Domain: ErrorDomain, Reason: string(Unprocessable), Metadata: map[string]string{fieldKey: "key"}}),
			Unprocessable, "reused", "key"},
		{"not a status", notStatus, Internal, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			back := FromGRPC(tt.err)
			if got := CodeOf(back); got != tt.wantCode {
				t.Fatalf("CodeOf(FromGRPC(%v)) = %v, want %v", tt.err, got, tt.wantCode)
			}
			if tt.wantMsg == "" {
				if _, ok := errors.AsType[*Error](back); ok || !errors.Is(back, tt.err) {
					t.Errorf("FromGRPC(%v) = %v, want a plain error wrapping it", tt.err, back)
				}
				return
			}
			got := back.(*Error)
			if got.Message != tt.wantMsg || got.Field != tt.wantField {
				t.Errorf("FromGRPC(%v) = message %q field %q, want %q field %q", tt.err, got.Message, got.Field, tt.wantMsg, tt.wantField)
			}
		})
	}
}

// A client converts twice (grpcclient's interceptor, then the caller's own FromGRPC): the
// second conversion must keep the problem as the first made it, not rebuild it from the
// wrapped status, whose message status.FromError reports as the whole chain's text.
func TestFromGRPCKeepsAProblem(t *testing.T) {
	first := FromGRPC(GRPC(&Error{Code: Unprocessable, Field: "hold_id", Message: "no such hold of yours"}))
	renamed := &Error{Code: Unavailable, Message: "inventory is unavailable", Err: FromGRPC(status.Error(codes.Unavailable, "dial tcp 10.0.0.3:9090"))}
	for _, err := range []error{first, renamed, fmt.Errorf("checkout: %w", first)} {
		if got := FromGRPC(err); got != err {
			t.Errorf("FromGRPC(%v) = %v, want it unchanged", err, got)
		}
	}
}
