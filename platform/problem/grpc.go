package problem

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the domain of the ErrorInfo detail GRPC attaches to a status. FromGRPC
// reads only details of this domain: another system's reasons are not our codes.
const ErrorDomain = "boxoffice.dev"

// fieldKey is the ErrorInfo metadata key that names the request field at fault.
const fieldKey = "field"

// grpcCode is the status code of each Code. It is not one to one: Gone and Unprocessable
// share FailedPrecondition, Invalid and UnsupportedMediaType InvalidArgument, so the code
// alone cannot say which one a status was; the ErrorInfo detail can.
var grpcCode = map[Code]codes.Code{
	Invalid: codes.InvalidArgument, Unauthorized: codes.Unauthenticated, Forbidden: codes.PermissionDenied,
	NotFound: codes.NotFound, Conflict: codes.AlreadyExists, Gone: codes.FailedPrecondition,
	Unprocessable: codes.FailedPrecondition, UnsupportedMediaType: codes.InvalidArgument, TooMany: codes.ResourceExhausted,
	Unavailable: codes.Unavailable, Internal: codes.Internal,
}

// GRPC converts err to a gRPC status error for a handler to return. A problem keeps its
// message (prefixed by its field: "hold_id: no such hold of yours") and gains an ErrorInfo
// detail from which FromGRPC rebuilds it exactly; any other error is a bare Internal.
func GRPC(err error) error {
	if err == nil {
		return nil
	}
	e, ok := errors.AsType[*Error](err)
	if !ok || CodeOf(err) == Internal {
		return status.Error(codes.Internal, "internal error")
	}
	msg := e.Message
	info := &errdetails.ErrorInfo{Reason: string(e.Code), Domain: ErrorDomain}
	if e.Field != "" {
		msg = e.Field + ": " + msg
		info.Metadata = map[string]string{fieldKey: e.Field}
	}
	st := status.New(grpcCode[e.Code], msg)
	// WithDetails fails only when a detail cannot be marshalled, which an ErrorInfo always
	// can; the bare status still carries the status code and the message.
	if detailed, err := st.WithDetails(info); err == nil {
		st = detailed
	}
	return st.Err()
}

// FromGRPC turns a gRPC client error back into an *Error, so a caller two hops away answers
// with the right status: exactly the problem GRPC sent, or, for a foreign status, one mapped
// by its code (a deadline or cancellation is Unavailable; Internal and unknown codes stay
// plain errors). nil, an *Error already, or a non-status error come back unchanged.
func FromGRPC(err error) error {
	if err == nil {
		return nil
	}
	// Converting a problem again would go by the status it wraps, whose message (as
	// status.FromError reports it) is the whole chain's text, and lose what it holds.
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if e := fromDetails(st); e != nil {
		e.Err = err
		return e
	}
	for code, c := range grpcCode {
		if c == st.Code() && code != Unprocessable && code != UnsupportedMediaType && code != Internal {
			return &Error{Code: code, Message: st.Message(), Err: err}
		}
	}
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Canceled:
		return &Error{Code: Unavailable, Message: "upstream timed out", Err: err}
	}
	return fmt.Errorf("grpc: %w", err)
}

// fromDetails returns the problem GRPC encoded in st, or nil when st has no ErrorInfo of
// ErrorDomain or its reason is not a Code that maps to st's code (Internal never travels
// as a problem). The message loses the "field: " prefix GRPC gave it.
func fromDetails(st *status.Status) *Error {
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != ErrorDomain {
			continue
		}
		code := Code(info.GetReason())
		if c, known := grpcCode[code]; !known || code == Internal || c != st.Code() {
			return nil
		}
		e := &Error{Code: code, Message: st.Message(), Field: info.GetMetadata()[fieldKey]}
		if e.Field != "" {
			e.Message = strings.TrimPrefix(e.Message, e.Field+": ")
		}
		return e
	}
	return nil
}
