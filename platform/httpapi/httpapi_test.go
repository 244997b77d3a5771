package httpapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

func say(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, s+" "+r.PathValue("id")) })
}

func TestRoutesMuxServesEachRouteOnItsMethod(t *testing.T) {
	routes := httpapi.Routes{
		{Method: "GET", Pattern: "/v1/things/{id}", Handler: say("get")},
		{Method: "DELETE", Pattern: "/v1/things/{id}", Handler: say("delete")},
		{Method: "POST", Pattern: "/v1/things", Handler: say("post")},
	}
	srv := httptest.NewServer(routes.Mux())
	defer srv.Close()
	tests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"get by id", "GET", "/v1/things/7", 200, "get 7"},
		{"delete by id", "DELETE", "/v1/things/7", 200, "delete 7"},
		{"post to the collection", "POST", "/v1/things", 200, "post "},
		{"method not in the table", "PUT", "/v1/things/7", 405, ""},
		{"path not in the table", "GET", "/v1/other", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.status || tt.body != "" && string(b) != tt.body {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, res.StatusCode, b, tt.status, tt.body)
			}
		})
	}
}

func TestRoutesEndpoints(t *testing.T) {
	routes := httpapi.Routes{{Method: "GET", Pattern: "/v1/a"}, {Method: "POST", Pattern: "/v1/a/{id}/b"}}
	got := routes.Endpoints()
	if want := []string{"GET /v1/a", "POST /v1/a/{id}/b"}; !slices.Equal(got, want) {
		t.Errorf("Endpoints() = %q, want %q", got, want)
	}
}

func TestWriteJSON(t *testing.T) {
	tests := []struct {
		name   string
		status int
		v      any
		want   int
		ctype  string
		body   string
	}{
		{"a value", http.StatusCreated, map[string]int{"n": 1}, 201, "application/json", "{\"n\":1}\n"},
		{"an empty list stays a list", http.StatusOK, []string{}, 200, "application/json", "[]\n"},
		{"a value json cannot encode", http.StatusOK, math.Inf(1), 500, "application/problem+json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			httpapi.WriteJSON(rec, tt.status, tt.v)
			if rec.Code != tt.want || rec.Header().Get("Content-Type") != tt.ctype || tt.body != "" && rec.Body.String() != tt.body {
				t.Errorf("WriteJSON(%d, %v) = %d %s %q, want %d %s %q", tt.status, tt.v, rec.Code, rec.Header().Get("Content-Type"), rec.Body, tt.want, tt.ctype, tt.body)
			}
			if cl := rec.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("Content-Length = %s, body has %d bytes", cl, rec.Body.Len())
			}
		})
	}
	// The 500 is a problem like any other: the client reads its code.
	rec := httptest.NewRecorder()
	httpapi.WriteJSON(rec, http.StatusOK, make(chan int))
	var p problem.Details
	if err := json.NewDecoder(rec.Body).Decode(&p); err != nil || p.Code != problem.Internal {
		t.Errorf("WriteJSON(chan) body = %+v, %v; want a problem with code %s", p, err, problem.Internal)
	}
}

func TestLimit(t *testing.T) {
	tests := []struct {
		name, query string
		want        int
		invalid     bool
	}{
		{"absent is the default", "", 20, false},
		{"within range", "limit=7", 7, false},
		{"the maximum", "limit=100", 100, false},
		{"zero", "limit=0", 0, true},
		{"negative", "limit=-1", 0, true},
		{"above the maximum", "limit=101", 0, true},
		{"not a number", "limit=ten", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			got, err := httpapi.Limit(q, 20, 100)
			if tt.invalid {
				if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Code != problem.Invalid || pe.Field != "limit" {
					t.Errorf("Limit(%q) = %d, %v; want an invalid problem naming limit", tt.query, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Limit(%q) = %d, %v; want %d", tt.query, got, err, tt.want)
			}
		})
	}
}

func TestWriteCreated(t *testing.T) {
	tests := []struct {
		name     string
		created  bool
		status   int
		replayed string
	}{
		{"created", true, http.StatusCreated, ""},
		{"a repeat of the key", false, http.StatusOK, "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			httpapi.WriteCreated(rec, "/v1/things/7", tt.created, map[string]string{"id": "7"})
			if rec.Code != tt.status || rec.Header().Get("Idempotent-Replayed") != tt.replayed ||
				rec.Header().Get("Location") != "/v1/things/7" || rec.Body.String() != "{\"id\":\"7\"}\n" {
				t.Errorf("WriteCreated(created=%v) = %d, replayed %q, location %q, body %q; want %d, %q, /v1/things/7, {\"id\":\"7\"}",
					tt.created, rec.Code, rec.Header().Get("Idempotent-Replayed"), rec.Header().Get("Location"), rec.Body, tt.status, tt.replayed)
			}
		})
	}
}
