package playground_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/ratelimit/lab"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/playground"
)

type labAnswer struct {
	Requests []struct {
		At   float64 `json:"at"`
		Key  string  `json:"key"`
		Cost int     `json:"cost"`
	} `json:"requests"`
	Results []lab.Result `json:"results"`
}

// TestLabReplaysEverySampleTraceLikeTheEngine posts each sample trace the lab page offers
// and requires exactly the decisions lab.Replay gives for it: the page shows the engine's
// answers, not a re-implementation.
func TestLabReplaysEverySampleTraceLikeTheEngine(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	traces, err := filepath.Glob(filepath.Join("web", "traces", "*.trace"))
	if err != nil || len(traces) < 3 {
		t.Fatalf("sample traces = %v, %v; want at least 3", traces, err)
	}
	for _, path := range traces {
		t.Run(filepath.Base(path), func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			status, body := testkit.PostJSON(t, p.HTTPURL+"/api/lab", map[string]any{"trace": string(text), "limit": 5, "window": "1s", "burst": 8})
			if status != http.StatusOK {
				t.Fatalf("POST /api/lab = %d %s, want 200", status, body)
			}
			var got labAnswer
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			trace, err := lab.ParseTrace(bytes.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			want, err := lab.Replay(trace, lab.Config{Limit: 5, Window: time.Second, Burst: 8})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Results, want) {
				t.Errorf("POST /api/lab results = %+v, want lab.Replay's %+v", got.Results, want)
			}
			if len(got.Requests) != len(trace) {
				t.Fatalf("POST /api/lab requests = %d, want the trace's %d", len(got.Requests), len(trace))
			}
			for i, q := range trace {
				r := got.Requests[i]
				if r.At != q.At.Seconds() || r.Key != q.Key || r.Cost != q.Cost {
					t.Errorf("requests[%d] = %+v, want at %v key %q cost %d", i, r, q.At.Seconds(), q.Key, q.Cost)
				}
			}
		})
	}
}

func TestLabRejectsWhatTheCommandRejects(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	ok := map[string]any{"trace": "0,a\n0.5,a\n", "limit": 1, "window": "1s"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range ok {
			m[k] = v
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name  string
		body  any
		field string
		want  string
	}{
		{"no limit", with("limit", 0), "limit", "at least 1"},
		{"no window", with("window", ""), "window", "positive duration"},
		{"negative window", with("window", "-1s"), "window", "positive duration"},
		{"negative burst", with("burst", -1), "burst", "negative"},
		{"unknown algorithm", with("algorithms", []string{"leaky"}), "algorithms", `unknown algorithm "leaky"`},
		{"time going back", with("trace", "1\n0.5\n"), "trace", "trace line 2"},
		{"empty trace", with("trace", "# nothing\n"), "trace", "no requests"},
		{"too long a trace", with("trace", strings.Repeat("0\n", 20001)), "trace", "more than the 20000"},
		{"unknown field", with("limt", 3), "limt", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := testkit.PostJSON(t, p.HTTPURL+"/api/lab", tt.body)
			var prob struct {
				Field  string `json:"field"`
				Detail string `json:"detail"`
			}
			_ = json.Unmarshal(body, &prob)
			if status != http.StatusBadRequest || prob.Field != tt.field || !strings.Contains(prob.Detail, tt.want) {
				t.Errorf("POST /api/lab %s = %d field %q detail %q, want 400 field %q detail containing %q", tt.name, status, prob.Field, prob.Detail, tt.field, tt.want)
			}
		})
	}
}

func TestLabListsEveryAlgorithm(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	resp, err := http.Get(p.HTTPURL + "/api/lab")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Algorithms []ratelimit.Algorithm `json:"algorithms"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Algorithms, ratelimit.Algorithms) {
		t.Errorf("GET /api/lab algorithms = %v, want %v", got.Algorithms, ratelimit.Algorithms)
	}
}
