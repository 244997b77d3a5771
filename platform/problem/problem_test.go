package problem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestWriteMapsCodesToStatus(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantDetail string
		wantField  string
	}{
		{"invalid field", InvalidField("seats", "want 1 to 8 seats"), 400, "want 1 to 8 seats", "seats"},
		{"not found", New(NotFound, "event %d not found", 7), 404, "event 7 not found", ""},
		{"wrapped conflict", fmt.Errorf("hold seats: %w", New(Conflict, "seat taken")), 409, "seat taken", ""},
		{"gone", New(Gone, "hold expired"), 410, "hold expired", ""},
		{"unavailable", New(Unavailable, "payment provider down"), 503, "payment provider down", ""},
		{"unsupported media type", &Error{Code: UnsupportedMediaType, Field: "Content-Type", Message: "want application/json"}, 415, "want application/json", "Content-Type"},
		{"plain error is internal", errors.New("pq: connection reset by 10.0.0.3"), 500, "internal error", ""},
		{"a code of no one's is internal", &Error{Code: "bogus", Message: "from 10.0.0.3"}, 500, "internal error", ""},
		{"the zero code is internal", &Error{Message: "from 10.0.0.3"}, 500, "internal error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := httptest.NewRecorder()
			Write(rec, httptest.NewRequest(http.MethodPost, "/v1/holds", nil), slog.New(slog.NewTextHandler(&logs, nil)), tt.err)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q, want application/problem+json", ct)
			}
			var d Details
			if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if d.Status != tt.wantStatus || d.Detail != tt.wantDetail || d.Field != tt.wantField || d.Instance != "/v1/holds" {
				t.Errorf("body = %+v, want status %d detail %q field %q", d, tt.wantStatus, tt.wantDetail, tt.wantField)
			}
			if tt.wantStatus == 500 && (strings.Contains(rec.Body.String(), "10.0.0.3") || !strings.Contains(logs.String(), "10.0.0.3")) {
				t.Errorf("internal cause must be logged but not shown: body %q, log %q", rec.Body, logs.String())
			}
		})
	}
}

// TestGRPCOfAnUnknownCode checks that a problem with a code of no one's is an internal
// error over gRPC too: mapped as it was, to codes.OK, it became a nil error, a success.
func TestGRPCOfAnUnknownCode(t *testing.T) {
	for _, e := range []*Error{{Code: "bogus", Message: "m"}, {Message: "m"}} {
		err := GRPC(e)
		if st, _ := status.FromError(err); err == nil || st.Code() != codes.Internal || st.Message() != "internal error" {
			t.Errorf("GRPC(%+v) = %v, want Internal \"internal error\"", e, err)
		}
	}
}
