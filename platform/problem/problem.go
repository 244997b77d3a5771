// Package problem is BoxOffice's one error type for things a client did or can act on, and the
// one place that maps it to HTTP (RFC 9457 problem details, application/problem+json) and to
// gRPC status codes.
//
// Domain code returns *problem.Error with a Code; transports call Write or GRPC and never pick
// a status themselves. Any other error is an internal one: the client sees a generic message
// and a trace id, the log sees the cause. Clients never see internals.
//
// Reading a JSON request body is httpapi.DecodeJSON's, beside httpapi.WriteJSON: it returns
// these problems, naming the field at fault.
package problem

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// Code classifies an error by what the client can do about it.
type Code string

// The codes. Each maps to exactly one HTTP status and one gRPC code.
const (
	Invalid       Code = "invalid"       // 400 / InvalidArgument: fix the request
	Unauthorized  Code = "unauthorized"  // 401 / Unauthenticated: log in
	Forbidden     Code = "forbidden"     // 403 / PermissionDenied: not yours
	NotFound      Code = "not_found"     // 404 / NotFound
	Conflict      Code = "conflict"      // 409 / AlreadyExists or a state clash: reload and retry
	Gone          Code = "gone"          // 410 / FailedPrecondition: expired (a hold, a pass)
	Unprocessable Code = "unprocessable" // 422 / FailedPrecondition: well-formed but not allowed now
	TooMany       Code = "too_many"      // 429 / ResourceExhausted: slow down
	Unavailable   Code = "unavailable"   // 503 / Unavailable: try again later
	Internal      Code = "internal"      // 500 / Internal: our fault

	// UnsupportedMediaType is 415 / InvalidArgument: send the body as the media type named
	// (httpapi.DecodeJSON names application/json).
	UnsupportedMediaType Code = "unsupported_media_type"
)

// Error is a client-facing error. Field names the request field at fault, when there is one.
type Error struct {
	Code    Code
	Message string
	Field   string
	Err     error // the cause, logged, never shown to the client
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": " + e.Message
	if e.Field != "" {
		msg = string(e.Code) + ": " + e.Field + ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidField returns an Invalid error naming the field at fault.
func InvalidField(field, format string, args ...any) *Error {
	return &Error{Code: Invalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns err's Code, or Internal when err is not (or does not wrap) an *Error, or
// its Code is none of the package's (the zero Code among them): an answer needs a status,
// and an error nobody classified is ours.
func CodeOf(err error) Code {
	if e, ok := errors.AsType[*Error](err); ok {
		if _, known := httpStatus[e.Code]; known {
			return e.Code
		}
	}
	return Internal
}

var httpStatus = map[Code]int{
	Invalid: http.StatusBadRequest, Unauthorized: http.StatusUnauthorized, Forbidden: http.StatusForbidden,
	NotFound: http.StatusNotFound, Conflict: http.StatusConflict, Gone: http.StatusGone,
	Unprocessable: http.StatusUnprocessableEntity, UnsupportedMediaType: http.StatusUnsupportedMediaType,
	TooMany: http.StatusTooManyRequests, Unavailable: http.StatusServiceUnavailable, Internal: http.StatusInternalServerError,
}

// HTTPStatus is the status code for err.
func HTTPStatus(err error) int { return httpStatus[CodeOf(err)] }

// Details is the RFC 9457 body. Extension members name the field and the trace.
type Details struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	Code     Code   `json:"code"`
	Field    string `json:"field,omitempty"`
	TraceID  string `json:"traceId,omitempty"`
}

// Write answers r with err as application/problem+json. Internal errors are logged with their
// cause and shown to the client only as "internal error" with the trace id.
func Write(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	d := Details{Type: "about:blank", Code: CodeOf(err), Instance: r.URL.Path}
	d.Status = httpStatus[d.Code]
	d.Title = http.StatusText(d.Status)
	if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
		d.TraceID = sc.TraceID().String()
	}
	if e, ok := errors.AsType[*Error](err); ok && d.Code != Internal {
		d.Detail, d.Field = e.Message, e.Field
	} else {
		d.Detail = "internal error"
		if log != nil {
			log.ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "error", err)
		}
	}
	if d.Code == Unavailable || d.Code == TooMany {
		w.Header().Set("Retry-After", "1")
	}
	WriteDetails(w, d.Status, d)
}

// WriteDetails writes body as an application/problem+json response with status; for callers
// that add their own members (the gateway's 429 names the violated policies).
func WriteDetails(w http.ResponseWriter, status int, body any) {
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
