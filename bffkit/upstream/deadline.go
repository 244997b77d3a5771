package upstream

import (
	"context"
	"time"

	"google.golang.org/grpc"

	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// Deadlines bounds each call a BFF makes to a service; 0 means none of the BFF's own (the
// caller's alone). Read bounds calls that only look: short, as a slow read is better dropped
// (its field null, with an error) than waited for. Write bounds the calls in Writes: long, in
// line with the gateway's, since a write the BFF cuts short is done by the service all the
// same and only its answer is lost (docs/lessons/bff.md, "Writes: exactly once across the hop").
type Deadlines struct {
	Read  time.Duration
	Write time.Duration
}

// DefaultWriteTimeout is Deadlines.Write when the process sets no BFF_WRITE_TIMEOUT: long
// enough for a write to finish under a flash sale's load, well within the gateway's 30 s.
const DefaultWriteTimeout = 10 * time.Second

// Writes are the calls the BFFs make that change state, by full gRPC method name: they get
// Deadlines.Write.
var Writes = map[string]bool{
	inventoryv1.Inventory_PlaceHold_FullMethodName:   true,
	inventoryv1.Inventory_ReleaseHold_FullMethodName: true,
	orderv1.Order_CreateOrder_FullMethodName:         true,
	waitroomv1.Waitroom_Join_FullMethodName:          true,
}

// For returns the deadline of method's calls.
func (d Deadlines) For(method string) time.Duration {
	if Writes[method] {
		return d.Write
	}
	return d.Read
}

// WithDeadlines wraps conn (dialled with no timeout of its own) so that each unary call runs
// under d.For(its method). A caller's deadline earlier than that is kept. Streams pass
// through unbounded.
func WithDeadlines(conn *grpc.ClientConn, d Deadlines) grpc.ClientConnInterface {
	return deadlineConn{conn, d}
}

type deadlineConn struct {
	*grpc.ClientConn
	d Deadlines
}

var _ grpc.ClientConnInterface = deadlineConn{}

func (c deadlineConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if timeout := c.d.For(method); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout) // keeps an earlier parent deadline
		defer cancel()
	}
	return c.ClientConn.Invoke(ctx, method, args, reply, opts...)
}
