// Package grpcclient opens the gRPC connections a BoxOffice process makes to the services it
// calls, the same way everywhere: plaintext on the private network, OpenTelemetry on every
// call (a client span, rpc.client.* metrics, traceparent in the metadata), a deadline on
// every call, errors as *problem.Error, and a readiness check for the connection.
package grpcclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"boxoffice.dev/platform/health"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/telemetry"
)

// Options configures Dial. The zero value dials without instrumentation, adds no deadline and
// names the service by its address in errors.
type Options struct {
	// Telemetry instruments every call; nil = none.
	Telemetry *telemetry.Telemetry
	// Timeout bounds each unary call: a caller's deadline later than now+Timeout (or none) is
	// replaced by it, an earlier one is kept. 0 = the caller's deadline alone. A short one is
	// what keeps a slow dependency from holding a whole request hostage.
	Timeout time.Duration
	// Service names the callee in the errors clients see ("inventory is unavailable");
	// "" = the address.
	Service string
}

// Dial returns a client connection to addr. It does not connect: the connection is made on
// the first call (or the first readiness check), so a process may start before the
// services it calls. Close the connection after the last call through it.
//
// Every unary call's error comes back as a *problem.Error (problem.FromGRPC) that still
// wraps the status, so status.Code keeps working; "unavailable" and timeouts name the
// service instead of carrying the transport's words (addresses, dial errors) to a client.
func Dial(addr string, o Options) (*grpc.ClientConn, error) {
	service := o.Service
	if service == "" {
		service = addr
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		o.Telemetry.GRPCDialOption(),
		grpc.WithChainUnaryInterceptor(unaryInterceptor(service, o.Timeout)),
	)
	if err != nil {
		return nil, fmt.Errorf("dial %s at %s: %w", service, addr, err)
	}
	return conn, nil
}

// unaryInterceptor applies the call deadline and turns errors into problems.
func unaryInterceptor(service string, timeout time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout) // keeps an earlier parent deadline
			defer cancel()
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil {
			return nil
		}
		err = problem.FromGRPC(err)
		switch problem.CodeOf(err) {
		case problem.Unavailable:
			return &problem.Error{Code: problem.Unavailable, Message: service + " is unavailable", Err: err}
		case problem.Internal:
			return fmt.Errorf("%s %s: %w", service, method, err)
		}
		return err
	}
}

// Ready returns a readiness check for conn: it asks an idle connection to connect, waits
// (within the check's context) until it is ready, and fails while the last attempt to
// reach the service failed or after the connection was closed.
//
// Register it only for a service this process cannot serve without: readiness takes an
// instance out of rotation, and a service every replica calls being down would take all of
// them out at once, where answering with partial data (or a clear error) serves better.
func Ready(conn *grpc.ClientConn) health.Check {
	return func(ctx context.Context) error {
		conn.Connect()
		for {
			switch s := conn.GetState(); s {
			case connectivity.Ready:
				return nil
			case connectivity.TransientFailure:
				return fmt.Errorf("%s: cannot connect", conn.Target())
			case connectivity.Shutdown:
				return errors.New(conn.Target() + ": connection closed")
			default:
				if !conn.WaitForStateChange(ctx, s) {
					return fmt.Errorf("%s: still %s: %w", conn.Target(), s, ctx.Err())
				}
			}
		}
	}
}
