package report

import (
	"bytes"
	"html/template"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/playground/scenario"
)

func TestWriteDrawsTheRunOffline(t *testing.T) {
	sc := scenario.Scenario{
		Name: "rate-limiter", Title: "Rate limiting <demo>", Explainer: "First paragraph\nwraps.\n\nSecond.",
		DocsPath: "docs/lessons/rate-limiting.md", Backend: scenario.BackendSpec{Service: "catalog"},
		Counters: []scenario.CounterSpec{{Name: "429:x", Label: "429s by x"}},
		Profiles: []scenario.Profile{{Name: "spike", Title: "A spike"}},
	}
	res := scenario.Result{
		Scenario: "rate-limiter", Profile: "spike", Started: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Series: []scenario.Sample{
			{T: 0, Phase: "off", Tally: scenario.Tally{OK: 40, P99: 110}, BackendInFlight: 3, BackendCapacity: 8},
			{T: 1, Phase: "off", Tally: scenario.Tally{OK: 70, Timeouts: 20, P99: 1900}, BackendInFlight: 8, BackendCapacity: 8},
			{T: 2, Phase: "on", Tally: scenario.Tally{OK: 40, TooMany: 120, P99: 120}, Counters: map[string]float64{"429:x": 120}},
		},
		Events:       []scenario.Event{{At: 2 * time.Second, Kind: "knob", What: "limit = true (phase on)"}},
		Phases:       []scenario.Stats{{Phase: "off", Seconds: 2, Tally: scenario.Tally{OK: 110}}, {Phase: "on", Seconds: 1, Tally: scenario.Tally{OK: 40, TooMany: 120}}},
		Totals:       scenario.Stats{Seconds: 3, Tally: scenario.Tally{OK: 150, TooMany: 120}, Counters: map[string]float64{"429:x": 120}},
		Expectations: []scenario.Outcome{{Name: "429s absorb the excess", Want: "too_many_ratio(on) >= 0.4", Got: "too_many_ratio(on) = 0.75", Passed: true}},
		Audit:        []scenario.AuditEntry{{ChangeID: "chg_5e1f", Actor: "admin:playground/r3", Kind: "limit", ID: "demo-limit", Action: "put"}},
	}
	var b bytes.Buffer
	if err := Write(&b, sc, res); err != nil {
		t.Fatalf("Write = %v", err)
	}
	html := b.String()
	for _, want := range []string{
		"Rate limiting &lt;demo&gt;",       // escaped
		"First paragraph wraps.",           // paragraphs re-flowed
		"every expectation met",            // the verdict
		"429s absorb the excess",           // each expectation
		"limit = true (phase on)",          // the timeline
		"<polygon",                         // stacked outcomes
		"<polyline",                        // latency lines
		"Backend (catalog) work in flight", // the backend chart
		"429s by x",                        // the scenario's counters
		"docs/lessons/rate-limiting.md",    // the lesson
		"<td>chg_5e1f</td><td>limit</td><td>demo-limit</td><td>put</td>", // the run's policy changes
		"/admin/audit?actor=admin:playground/r3",                         // where to read them whole
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(html, "<svg"); n != 4 {
		t.Errorf("report has %d charts, want 4 (outcomes, latency, backend, counters)", n)
	}
	for _, ext := range []string{"http://", "https://", "<script", "<link"} {
		if strings.Contains(html, ext) {
			t.Errorf("report contains %q: it must be self-contained", ext)
		}
	}
}

// TestWriteShowsEachStream: a scenario of several streams gets its phases per stream too, in
// the scenario's order; one of a single stream does not.
func TestWriteShowsEachStream(t *testing.T) {
	sc := scenario.Scenario{Name: "multi-region", Streams: []scenario.StreamSpec{{Name: "home"}, {Name: "static"}}}
	res := scenario.Result{Phases: []scenario.Stats{{Phase: "us-day", Seconds: 10, Streams: map[string]*scenario.Stats{
		"static": {Seconds: 10, Tally: scenario.Tally{Requests: 1600, OK: 452, TooMany: 1148, Goodput: 452, P50: 0.33}},
		"home":   {Seconds: 10, Tally: scenario.Tally{Requests: 1600, OK: 1000, TooMany: 600, Goodput: 1000, P50: 102.9}},
	}}}}
	var b bytes.Buffer
	if err := Write(&b, sc, res); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	home, static := strings.Index(html, "<td>us-day</td><td>home</td>"), strings.Index(html, "<td>us-day</td><td>static</td>")
	if !strings.Contains(html, "By stream") || home < 0 || static < home {
		t.Errorf("report lacks the phases by stream, home before static:\n%s", html)
	}
	if !strings.Contains(html, "<td>static</td><td>1600</td><td>452</td><td>1148</td><td>45.2</td>") {
		t.Error("static's row lacks its requests, 2xx, 429 and goodput per second")
	}
	sc.Streams = sc.Streams[:1]
	b.Reset()
	if err := Write(&b, sc, res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "By stream") {
		t.Error("a one-stream scenario's report has a table by stream")
	}
}

func TestWriteSaysWhenAnExpectationIsMissed(t *testing.T) {
	res := scenario.Result{Expectations: []scenario.Outcome{{Name: "flat p99", Passed: false}}}
	var b bytes.Buffer
	if err := Write(&b, scenario.Scenario{Title: "t"}, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "an expectation was missed") || !strings.Contains(b.String(), "missed</span>") {
		t.Errorf("report of a failed run does not say so:\n%s", b.String())
	}
}

func TestNiceCeil(t *testing.T) {
	tests := []struct{ in, want float64 }{{0, 1}, {0.4, 1}, {3, 5}, {7, 10}, {12, 20}, {160, 200}, {1999, 2000}, {2001, 5000}}
	for _, tt := range tests {
		if got := niceCeil(tt.in); got != tt.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// The limiter's decisions by path are drawn stacked, each path in the colour the
// playground's page gives it, with what it means; a phase shows its share made without the
// store.
func TestWriteDrawsTheDecisionsByPath(t *testing.T) {
	res := scenario.Result{
		Series: []scenario.Sample{
			{T: 0, Phase: "calm", Decisions: map[string]float64{"store": 40}},
			{T: 1, Phase: "outage", Decisions: map[string]float64{"fallback": 30, "fail_closed": 10}},
			{T: 2, Phase: "outage", Decisions: map[string]float64{"fallback": 30, "a-new-path": 2}},
		},
		Phases: []scenario.Stats{
			{Phase: "calm", Decisions: map[string]float64{"store": 40}},
			{Phase: "outage", Decisions: map[string]float64{"fallback": 60, "fail_closed": 10, "a-new-path": 3}},
		},
		Totals: scenario.Stats{Decisions: map[string]float64{"store": 40, "fallback": 60, "fail_closed": 10, "a-new-path": 3}},
	}
	var b bytes.Buffer
	if err := Write(&b, scenario.Scenario{Title: "t"}, res); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if !strings.Contains(html, "Limiter decisions by path (decisions/s)") {
		t.Fatalf("report lacks the decisions chart:\n%s", html)
	}
	for _, p := range []string{"store", "fallback", "fail_closed", "a-new-path"} {
		d := scenario.DescribePath(p)
		if !strings.Contains(html, `fill="`+d.Colour+`" fill-opacity="0.75"><title>`+p+`</title>`) {
			t.Errorf("report draws no %s band in %s, the page's colour", p, d.Colour)
		}
		if !strings.Contains(html, "<dt>"+p+"</dt><dd>"+template.HTMLEscapeString(d.Help)+"</dd>") {
			t.Errorf("report does not say what %s means", p)
		}
	}
	// The bands stack as the page's do: the store at the bottom, then the listed paths, then
	// the others.
	if i, j, k := strings.Index(html, "<title>store</title>"), strings.Index(html, "<title>fail_closed</title>"), strings.Index(html, "<title>a-new-path</title>"); !(i < j && j < k) {
		t.Errorf("bands in the order store %d, fail_closed %d, a-new-path %d; want that order", i, j, k)
	}
	for _, want := range []string{"<td>0%</td>", "<td>96%</td>", "<td>62%</td>"} { // calm, outage, the run
		if !strings.Contains(html, want) {
			t.Errorf("phases table lacks %s, a share made without the store", want)
		}
	}
}

// The report draws in the page's palette, keeps the backend's capacity readable beside a
// long queue (the queue on the right-hand scale), leaves a gap where no request was accepted,
// and counts expected refusals apart from timeouts and errors.
func TestWriteReadsLikeThePage(t *testing.T) {
	sc := scenario.Scenario{
		Title: "t", Backend: scenario.BackendSpec{Service: "catalog"},
		Client: scenario.ClientSpec{Expected: []scenario.Refusal{{Status: 409, Meaning: "seat taken"}}},
	}
	res := scenario.Result{Series: []scenario.Sample{
		{T: 0, Phase: "a", Tally: scenario.Tally{OK: 10, P99: 50}, BackendInFlight: 8, BackendCapacity: 8, BackendQueued: 400},
		{T: 1, Phase: "a", Tally: scenario.Tally{ClientErrors: 30, Timeouts: 2}, BackendInFlight: 8, BackendCapacity: 8, BackendQueued: 300},
		{T: 2, Phase: "b", Tally: scenario.Tally{OK: 10, P99: 60}, BackendInFlight: 2, BackendCapacity: 8},
	}}
	var b bytes.Buffer
	if err := Write(&b, sc, res); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for name, want := range map[string]string{
		"2xx in the page's colour":            `fill="` + scenario.Palette["ok"] + `" fill-opacity="0.75"><title>2xx</title>`,
		"expected refusals named apart":       `<title>expected 4xx (409 seat taken)</title>`,
		"timeouts and errors together":        `<title>timeouts and errors</title>`,
		"the queue on the right-hand scale":   `transform="rotate(90 996 122)">queued</text>`,
		"the capacity dashed":                 `stroke-dasharray="6 4"><title>capacity (slots)</title>`,
		"the left scale topped by the slots":  `>10</text>`,
		"the right scale topped by the queue": `>500</text>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %s: %q", name, want)
		}
	}
	// p99 has no value at t=1 (nothing accepted): two pieces of line, not one dropping to 0.
	if n := strings.Count(html, "<title>p99</title></polyline>"); n != 2 {
		t.Errorf("p99 drawn in %d pieces, want 2 (a gap where nothing was accepted)", n)
	}
}

func TestTick(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{0, "0"}, {12.5, "12.5"}, {0.2, "0.2"}, {1000, "1000"}, {0.4000000001, "0.4"}}
	for _, tt := range tests {
		if got := tick(tt.in); got != tt.want {
			t.Errorf("tick(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
