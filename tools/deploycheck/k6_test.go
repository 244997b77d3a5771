package deploycheck

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/scenarios/k6/shim"
)

// TestK6ScriptsPutKnobsBack runs each k6 script of scenarios/k6 (the scripts the compose k6
// service runs) once in Node through the k6 shim, against stand-ins of the system: two
// control hooks and a gateway whose admin API keeps its edits. The hooks start with knobs a
// script would not set itself, and the gateway with an edit of api-per-ip; after the run each
// must hold them again. A script that leaves the catalog throttled to its scenario's capacity,
// or a limit raised for its run, fails here. (cmd/boxoffice's TestK6ScriptsAgainstUp runs
// them against the real system.)
func TestK6ScriptsPutKnobsBack(t *testing.T) {
	node := testkit.LookPath(t, "node")
	w := loadWorkspace(t)
	scripts, err := filepath.Glob(filepath.Join(w.Root, "scenarios", "k6", "*.js"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no k6 scripts (%v)", err)
	}
	const knobs = `{"latency_ms":3,"error_rate":0.25,"outage":false,"max_concurrent":9,"service_time_ms":7}`
	const apiPerIP = `{"id":"api-per-ip","key":"ip","algorithm":"token_bucket","rate":"7/s","burst":7}`
	writes := 0
	for _, s := range scripts {
		t.Run(filepath.Base(s), func(t *testing.T) {
			hooks := []*fakeHook{{knobs: knobs}, {knobs: knobs}}
			var urls []string
			for _, h := range hooks {
				srv := httptest.NewServer(h)
				t.Cleanup(srv.Close)
				urls = append(urls, srv.URL)
			}
			gw := &fakeGateway{edits: map[string]json.RawMessage{"limit/api-per-ip": json.RawMessage(apiPerIP)}}
			before := maps.Clone(gw.edits)
			srv := httptest.NewServer(gw)
			t.Cleanup(srv.Close)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := shim.Run(ctx, node, s, 1, []string{
				"BASE_URL=" + srv.URL, "ADMIN_URL=" + srv.URL, "ADMIN_TOKEN=t",
				"CONTROL_URLS=" + strings.Join(urls, ","), "K6_SLEEP_SCALE=0"})
			if err != nil {
				t.Fatal(err)
			}
			if p := r.Problems(); len(p) > 0 {
				t.Errorf("the run against stand-ins:\n%s", strings.Join(p, "\n"))
			}
			for i, h := range hooks {
				if h.knobs != knobs {
					t.Errorf("knobs of hook %d after the run = %s, want them put back: %s", i, h.knobs, knobs)
				}
				writes += h.writes
			}
			if !maps.EqualFunc(gw.edits, before, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
				t.Errorf("gateway edits after the run = %s, want them put back: %s", gw.edits, before)
			}
			writes += gw.writes
		})
	}
	if writes == 0 {
		t.Error("no script changed a knob or a limit: the stand-ins reached none of their calls")
	}
}

// fakeHook is a service instance's control hook: GET and PUT /control.
type fakeHook struct {
	mu     sync.Mutex
	knobs  string
	writes int
}

func (h *fakeHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case r.URL.Path != "/control":
		http.NotFound(w, r)
	case r.Method == http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		h.knobs = string(b)
		h.writes++
	case r.Method != http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	io.WriteString(w, h.knobs)
}

// fakeGateway answers the public API with empty JSON objects (a login with a token), and
// keeps the admin API's edits of limits and routes by "kind/id", as the gateway stores them.
type fakeGateway struct {
	mu     sync.Mutex
	edits  map[string]json.RawMessage
	writes int
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/admin/"), "/")
	switch {
	case !strings.HasPrefix(r.URL.Path, "/admin/"):
		if r.URL.Path == "/v1/auth/login" {
			io.WriteString(w, `{"access_token":"t"}`)
			return
		}
		io.WriteString(w, "{}")
	case r.Header.Get("Authorization") != "Bearer t":
		w.WriteHeader(http.StatusUnauthorized)
	case r.Method == http.MethodGet && r.URL.Path == "/admin/edits":
		var list []map[string]any
		for k, v := range g.edits {
			kind, id, _ := strings.Cut(k, "/")
			list = append(list, map[string]any{"kind": kind, "id": id, "value": v})
		}
		json.NewEncoder(w).Encode(map[string]any{"edits": list})
	case r.Method == http.MethodDelete && len(parts) == 3 && parts[0] == "edits":
		delete(g.edits, parts[1]+"/"+parts[2])
		g.writes++
	case len(parts) == 2 && (parts[0] == "limits" || parts[0] == "routes"):
		key := strings.TrimSuffix(parts[0], "s") + "/" + parts[1]
		switch r.Method {
		case http.MethodGet:
			if v, ok := g.edits[key]; ok {
				w.Write(v)
			} else if parts[0] == "routes" {
				json.NewEncoder(w).Encode(map[string]any{"id": parts[1], "limits": []string{"api-per-ip"}})
			} else {
				json.NewEncoder(w).Encode(map[string]any{"id": parts[1], "key": "ip", "algorithm": "gcra", "rate": "1/s", "burst": 1})
			}
		case http.MethodPut, http.MethodPatch:
			b, _ := io.ReadAll(r.Body)
			g.edits[key] = b
			g.writes++
			w.Write(b)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	default:
		http.NotFound(w, r)
	}
}
