package policy

import (
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	s := mustCompile(t, `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: events, match: {method: GET, path: /v1/events}, service: svc, auth: none}
  - {id: event, match: {method: GET, path: "/v1/events/{id}"}, service: svc, auth: none}
  - {id: seats, match: {method: GET, path: "/v1/events/{id}/seats"}, service: svc, auth: none}
  - {id: holds, match: {method: POST, path: "/v1/events/{id}/holds"}, service: svc, auth: user}
  - {id: special, match: {method: GET, path: /v1/events/special}, service: svc, auth: none}
  - {id: files, match: {path: "/static/{path...}"}, service: svc, auth: none}
  - {id: root, match: {method: GET, path: /}, service: svc, auth: none}
`)
	tests := []struct {
		method, path string
		want         string
		allowed      []string
	}{
		{"GET", "/v1/events", "events", nil},
		{"HEAD", "/v1/events", "events", nil},
		{"GET", "/v1/events/evt-1", "event", nil},
		{"GET", "/v1/events/special", "special", nil},
		{"GET", "/v1/events/evt-1/seats", "seats", nil},
		{"POST", "/v1/events/evt-1/holds", "holds", nil},
		{"GET", "/v1/events/evt-1/holds", "", []string{"POST"}},
		{"DELETE", "/static/a/b/c.js", "files", nil},
		{"GET", "/static/", "files", nil},
		{"GET", "/", "root", nil},
		{"GET", "/v1/nothing", "", nil},
		{"GET", "/v1/events/evt-1/seats/extra", "", nil},
	}
	for _, tt := range tests {
		r, allowed := s.Match(tt.method, tt.path)
		got := ""
		if r != nil {
			got = r.ID
		}
		if got != tt.want || !slices.Equal(allowed, tt.allowed) {
			t.Errorf("Match(%s %s) = %q, allowed %v; want %q, allowed %v", tt.method, tt.path, got, allowed, tt.want, tt.allowed)
		}
	}
}
