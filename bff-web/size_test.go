package bffweb

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/identity"
)

// TestBigRequestsAreRefusedAtOnce: parsing and validating a query costs more than linear
// time in its fields (8000 took seconds of a core), before any other limit applies; the body
// and token limits refuse such a request before that work.
func TestBigRequestsAreRefusedAtOnce(t *testing.T) {
	f := newFixture(t, 3, false)
	for _, tc := range []struct {
		name       string
		query      string
		wantStatus int
		wantText   string
	}{
		{"8000 fields, 88 KB", "{" + strings.Repeat("__typename ", 8000) + "}", http.StatusRequestEntityTooLarge, "larger than 16384 bytes"},
		{"8000 fields in 16 KB", "{" + strings.Repeat("a ", 8000) + "}", http.StatusUnprocessableEntity, "token limit"},
		{"the event page", eventPage, http.StatusOK, `"title":"Show number 1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"query": tc.query, "variables": map[string]any{"id": "evt-001"}})
			req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(identity.HeaderUser, fan)
			rec := httptest.NewRecorder()
			start := time.Now()
			f.h.ServeHTTP(rec, req)
			took := time.Since(start)
			if rec.Code != tc.wantStatus || !strings.Contains(rec.Body.String(), tc.wantText) {
				t.Errorf("POST %d bytes = %d %.200s, want %d with %q", len(body), rec.Code, rec.Body, tc.wantStatus, tc.wantText)
			}
			if tc.wantStatus != http.StatusOK && took > 100*time.Millisecond {
				t.Errorf("POST %d bytes refused in %v, want well under 100ms", len(body), took)
			}
		})
	}
}
