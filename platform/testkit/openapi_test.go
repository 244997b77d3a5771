package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps failures instead of reporting them, to test the
// helpers that fail tests. Fatalf ends the goroutine, as the real one does.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// record runs fn with a recorder on its own goroutine, so a Fatalf ends only fn.
func record(t *testing.T, fn func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.failures
}

const spec = `openapi: 3.0.3
info: {title: probe, version: "1"}
paths:
  /v1/things:
    get: {responses: {"200": {description: ok}}}
    post: {responses: {"201": {description: created}}}
  /v1/things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}}
    summary: one thing
    delete: {responses: {"204": {description: gone}}}
`

func TestCheckOpenAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probe.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   string
		routes []string
		want   []string // a substring of each failure, in order
	}{
		{"equal both ways", path, []string{"DELETE /v1/things/{id}", "POST /v1/things", "GET /v1/things"}, nil},
		{"a documented operation not served", path, []string{"GET /v1/things", "POST /v1/things"},
			[]string{`documents ["DELETE /v1/things/{id}"], which the route table does not serve`}},
		{"a served route not documented", path, []string{"GET /v1/things", "POST /v1/things", "DELETE /v1/things/{id}", "PUT /v1/things/{id}"},
			[]string{`serves ["PUT /v1/things/{id}"], which`}},
		{"a missing document", filepath.Join(t.TempDir(), "none.yaml"), nil, []string{"read openapi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := record(t, func(tb testing.TB) { CheckOpenAPI(tb, tt.path, tt.routes) })
			if len(got) != len(tt.want) {
				t.Fatalf("CheckOpenAPI(%v) failed with %q, want %d failures like %q", tt.routes, got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("CheckOpenAPI(%v) failure %d = %q, want it to contain %q", tt.routes, i, got[i], tt.want[i])
				}
			}
		})
	}
}
