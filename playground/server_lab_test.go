package playground_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
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
	with2 := func(k string, v any, k2 string, v2 any) map[string]any {
		m := with(k, v)
		m[k2] = v2
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
		{"bad max delay", with("max_delay", "soon"), "max_delay", "duration"},
		{"negative max delay", with("max_delay", "-1s"), "max_delay", "duration"},
		{"ceiling without a parent", with("ceiling", 3), "ceiling", "under a parent"},
		{"reserve without a parent", with("reserve", 3), "reserve", "under a parent"},
		{"negative parent", with("parent", -1), "parent", "negative"},
		{"bad sync", with("sync", "often"), "sync", "duration"},
		{"sync under 10ms", with("sync", "5ms"), "sync", "want from 10ms to less than the window (1s)"},
		{"sync of the window", with("sync", "1s"), "sync", "want from 10ms to less than the window (1s)"},
		{"sync under a parent", with2("sync", "100ms", "parent", 10), "sync", "a parent"},
		{"negative replicas", with2("sync", "100ms", "replicas", -1), "replicas", "want 1 to 100"},
		{"too many replicas", with2("sync", "100ms", "replicas", 101), "replicas", "want 1 to 100"},
		{"replicas without a sync", with("replicas", 2), "replicas", "needs a sync"},
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

// TestLabWorkedExamplesKeepTheLessonsNumbers replays the worked examples of
// docs/lessons/algorithms.md through POST /api/lab and requires the numbers the lesson gives:
// totals per algorithm, requests allowed in each second of the trace, and the budget left
// after the last request.
func TestLabWorkedExamplesKeepTheLessonsNumbers(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	tests := []struct {
		trace     string
		query     map[string]any
		allowed   map[ratelimit.Algorithm]int
		perSecond map[ratelimit.Algorithm][]int // allowed in [0 s, 1 s), [1 s, 2 s), …
		lastLeft  map[ratelimit.Algorithm]int   // Remaining after the last request
	}{
		{
			trace: "window-edge", query: map[string]any{"limit": 10, "window": "1s"},
			allowed: map[ratelimit.Algorithm]int{ratelimit.FixedWindow: 20, ratelimit.SlidingLog: 10, ratelimit.SlidingCounter: 11,
				ratelimit.TokenBucket: 10, ratelimit.GCRA: 10, ratelimit.Concurrency: 10},
		},
		{
			trace: "refresh-burst", query: map[string]any{"limit": 10, "window": "1s", "burst": 20},
			perSecond: map[ratelimit.Algorithm][]int{ratelimit.TokenBucket: {29, 10}, ratelimit.GCRA: {29, 10}},
		},
		{
			trace: "sustained", query: map[string]any{"limit": 10, "window": "1s", "burst": 20},
			perSecond: map[ratelimit.Algorithm][]int{
				ratelimit.TokenBucket: {14, 14, 14, 14, 13, 10, 10, 10},
				ratelimit.GCRA:        {14, 14, 14, 14, 13, 10, 10, 10},
			},
		},
		{
			// 30 + ⌊80 × 45/60⌋ = 90 of 100 for the counter; the log counts the 89 really
			// sent in the last minute.
			trace: "sliding-estimate", query: map[string]any{"limit": 100, "window": "1m"},
			allowed:  map[ratelimit.Algorithm]int{ratelimit.SlidingCounter: 110, ratelimit.SlidingLog: 110},
			lastLeft: map[ratelimit.Algorithm]int{ratelimit.SlidingCounter: 10, ratelimit.SlidingLog: 11},
		},
	}
	for _, tt := range tests {
		t.Run(tt.trace, func(t *testing.T) {
			got := replaySample(t, p.HTTPURL, tt.trace, maps.Clone(tt.query))
			byName := map[ratelimit.Algorithm]lab.Result{}
			for _, r := range got.Results {
				byName[r.Algorithm] = r
			}
			for a, want := range tt.allowed {
				if r := byName[a]; r.Allowed != want {
					t.Errorf("%s allowed %d, want %d", a, r.Allowed, want)
				}
			}
			for a, want := range tt.perSecond {
				perSecond := make([]int, len(want))
				for i, q := range got.Requests {
					if s := int(q.At); s < len(want) && byName[a].Decisions[i] {
						perSecond[s]++
					}
				}
				if !reflect.DeepEqual(perSecond, want) {
					t.Errorf("%s allowed per second %v, want %v", a, perSecond, want)
				}
			}
			for a, want := range tt.lastLeft {
				if left := byName[a].Remaining; len(left) == 0 || left[len(left)-1] != want {
					t.Errorf("%s remaining after the last request: %v, want %d", a, left, want)
				}
			}
		})
	}
}

// TestLabShowsBorrowing replays the two-tenants trace under a plan of 10 a second, each
// tenant guaranteed 5 and allowed 10: while "idle" is idle "busy" borrows its share (17
// passes in the first second, the plan's full bucket and refill less its reserve of 2, then
// 10); once "idle" sends its 5 a second, it gets all of them and busy is back to 5, borrowing
// nothing. These are the numbers of docs/lessons/algorithms.md, "Hierarchies that borrow".
func TestLabShowsBorrowing(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	got := replaySample(t, p.HTTPURL, "two-tenants", map[string]any{"limit": 5, "window": "1s",
		"parent": 10, "ceiling": 10, "reserve": 2, "algorithms": []string{"token_bucket", "gcra"}})
	for _, r := range got.Results {
		count := map[string][]int{"busy": make([]int, 4), "idle": make([]int, 4), "borrowed": make([]int, 4)}
		for i, q := range got.Requests {
			if r.Decisions[i] {
				count[q.Key][int(q.At)]++
			}
			if r.Borrowed[i] {
				count["borrowed"][int(q.At)]++
			}
		}
		want := map[string][]int{"busy": {17, 10, 5, 5}, "idle": {0, 0, 5, 5}, "borrowed": {8, 5, 0, 0}}
		if !reflect.DeepEqual(count, want) {
			t.Errorf("%s: passed per second %v, want %v", r.Algorithm, count, want)
		}
	}
}

// TestLabOffersEverySampleTrace holds the page's list of sample traces to the files in
// web/traces: a trace nobody can pick, or a choice with no file, is a mistake.
func TestLabOffersEverySampleTrace(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("web", "lab.html"))
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, m := range regexp.MustCompile(`<option value="([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		offered = append(offered, m[1]+".trace")
	}
	files, err := filepath.Glob(filepath.Join("web", "traces", "*.trace"))
	if err != nil {
		t.Fatal(err)
	}
	var present []string
	for _, f := range files {
		present = append(present, filepath.Base(f))
	}
	slices.Sort(offered)
	if !reflect.DeepEqual(offered, present) {
		t.Errorf("lab.html offers %v, want the files in web/traces %v", offered, present)
	}
}

// TestLabShowsTheQueue: with a max delay the lab adds the queue's line, request by request:
// forty at once into a queue of 20 at 10 a second pass one at once, delay 19 by 0.1 to
// 1.9 s and refuse 20, where the gcra meter lets the same twenty through at once.
func TestLabShowsTheQueue(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	got := replaySample(t, p.HTTPURL, "forty-at-once", map[string]any{"limit": 10, "window": "1s",
		"burst": 20, "max_delay": "2s", "algorithms": []string{"gcra"}})
	if len(got.Results) != 2 || got.Results[1].Label != lab.QueueLabel {
		t.Fatalf("results = %+v, want gcra then %s", got.Results, lab.QueueLabel)
	}
	var waited []float64
	for i, d := range got.Results[1].Delays {
		if d > 0 {
			waited = append(waited, d)
		}
		if got.Results[1].Decisions[i] != got.Results[0].Decisions[i] {
			t.Errorf("request %d: the queue decided %v, the meter %v; want the same requests served", i+1, got.Results[1].Decisions[i], got.Results[0].Decisions[i])
		}
	}
	if got.Results[1].Allowed != 20 || len(waited) != 19 || waited[0] != 0.1 || waited[18] != 1.9 {
		t.Errorf("queue allowed %d, waits %v; want 20, 19 of 0.1 s to 1.9 s", got.Results[1].Allowed, waited)
	}
}

// TestLabShowsApproximateCounting: with a sync the lab adds the fixed window counted
// approximately on three replicas: on the flood of 300 requests in a second under 100 a
// second it admits 120, 20 over, where the exact fixed window admits 100.
func TestLabShowsApproximateCounting(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	got := replaySample(t, p.HTTPURL, "flood", map[string]any{"limit": 100, "window": "1s", "sync": "100ms", "algorithms": []string{"fixed_window"}})
	if len(got.Results) != 2 || got.Results[1].Label != "fixed_window ~100ms×3" {
		t.Fatalf("results = %+v, want fixed_window then fixed_window ~100ms×3", got.Results)
	}
	exact, approx := got.Results[0], got.Results[1]
	if exact.Allowed != 100 || approx.Allowed != 120 || approx.Over != 20 || approx.Replicas != 3 || approx.Note == "" {
		t.Errorf("exact allowed %d; approximate allowed %d, over %d on %d replicas, note %q; want 100, then 120, 20 over on 3, with the bound",
			exact.Allowed, approx.Allowed, approx.Over, approx.Replicas, approx.Note)
	}
}

// replaySample posts the sample trace name (web/traces) with query to the playground at url,
// POST /api/lab, and returns its answer, which must be 200.
func replaySample(t *testing.T, url, name string, query map[string]any) labAnswer {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("web", "traces", name+".trace"))
	if err != nil {
		t.Fatal(err)
	}
	query["trace"] = string(text)
	status, body := testkit.PostJSON(t, url+"/api/lab", query)
	if status != http.StatusOK {
		t.Fatalf("POST /api/lab = %d %s, want 200", status, body)
	}
	var got labAnswer
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return got
}
