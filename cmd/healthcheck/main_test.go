package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			w.WriteHeader(http.StatusOK)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default:
			http.Error(w, "db: connection refused", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := []struct {
		name    string
		args    []string
		wantErr string // "" = exit 0
	}{
		{name: "ready", args: []string{srv.URL + "/readyz"}},
		{name: "not ready", args: []string{srv.URL + "/notready"}, wantErr: "503 Service Unavailable: db: connection refused"},
		{name: "nothing listening", args: []string{closed.URL + "/readyz"}, wantErr: "connection refused"},
		{name: "too slow", args: []string{"-timeout", "100ms", srv.URL + "/slow"}, wantErr: "deadline exceeded"},
		{name: "no url", args: nil, wantErr: "want one URL"},
		{name: "two urls", args: []string{srv.URL, srv.URL}, wantErr: "want one URL"},
		{name: "bad flag", args: []string{"-colour", srv.URL}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tt.args, &out)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("run(%q) = %v, want nil", tt.args, err)
			case tt.wantErr == "" && !strings.Contains(out.String(), "200 OK"):
				t.Errorf("run(%q) wrote %q, want the 200 status", tt.args, out.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}
