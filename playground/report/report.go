// Package report writes a scenario run as one self-contained HTML file: the explainer, the
// charts (inline SVG drawn from the run's per-second series, so the file needs no script and
// no network), the phases' statistics, the knobs' timeline and the expectations met or
// missed — something a student can open offline or hand in.
package report

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"boxoffice.dev/playground/scenario"
)

// Write renders res, a run of sc, as HTML to w.
func Write(w io.Writer, sc scenario.Scenario, res scenario.Result) error {
	v := view{Scenario: sc, Result: res, Passed: res.Passed()}
	v.Charts = charts(sc, res)
	for _, p := range sc.Profiles {
		if p.Name == res.Profile {
			v.ProfileTitle = p.Title
		}
	}
	for _, para := range strings.Split(strings.TrimSpace(sc.Explainer), "\n\n") {
		v.Explainer = append(v.Explainer, strings.Join(strings.Fields(para), " "))
	}
	v.Counters = slices.Sorted(maps.Keys(res.Totals.Counters))
	if len(sc.Streams) > 1 {
		for _, st := range sc.Streams {
			v.Streams = append(v.Streams, st.Name)
		}
	}
	v.Decisions = len(res.Totals.Decisions) > 0
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

type view struct {
	Scenario     scenario.Scenario
	Result       scenario.Result
	ProfileTitle string
	Explainer    []string
	Passed       bool
	Charts       []template.HTML
	Counters     []string
	// Streams names the streams, in the scenario's order, when there are several: the
	// phases are then shown per stream too (one per way of a limit, one per kind of client).
	Streams []string
	// Decisions: the run read the gateway's decisions, and the phases show the share made
	// without the store.
	Decisions bool
}

// charts draws the run's series: requests by outcome, accepted latency, the backend's load,
// the limiter's decisions by path and the scenario's own counters, each over the run's
// phases.
func charts(sc scenario.Scenario, res scenario.Result) []template.HTML {
	s := res.Series
	col := func(f func(scenario.Sample) float64) []float64 {
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = f(x)
		}
		return out
	}
	bands := phaseBands(s)
	var out []template.HTML
	pal := scenario.Palette
	out = append(out, chart{
		Title: "Requests per second by outcome", Unit: "req/s", Stacked: true, Bands: bands,
		Lines: []line{
			{Label: "2xx", Color: pal["ok"], Values: col(func(x scenario.Sample) float64 { return float64(x.OK) })},
			{Label: "429", Color: pal["too_many"], Values: col(func(x scenario.Sample) float64 { return float64(x.TooMany) })},
			{Label: "503", Color: pal["unavailable"], Values: col(func(x scenario.Sample) float64 { return float64(x.Unavailable) })},
			{Label: "other 5xx", Color: pal["server"], Values: col(func(x scenario.Sample) float64 { return float64(x.ServerErrors) })},
			{Label: refusedLabel(sc), Color: pal["refused"], Values: col(func(x scenario.Sample) float64 { return float64(x.ClientErrors) })},
			{Label: "timeouts and errors", Color: pal["failed"], Values: col(func(x scenario.Sample) float64 { return float64(x.Timeouts + x.Errors) })},
		},
	}.svg())
	// A second without an accepted request has no latency: a gap, not a 0 ms line.
	accepted := func(f func(scenario.Sample) float64) func(scenario.Sample) float64 {
		return func(x scenario.Sample) float64 {
			if x.OK == 0 {
				return math.NaN()
			}
			return f(x)
		}
	}
	out = append(out, chart{
		Title: "Latency of accepted requests", Unit: "ms", Bands: bands,
		Lines: []line{
			{Label: "p50", Color: pal["ok"], Values: col(accepted(func(x scenario.Sample) float64 { return x.P50 }))},
			{Label: "p95", Color: pal["blue"], Values: col(accepted(func(x scenario.Sample) float64 { return x.P95 }))},
			{Label: "p99", Color: pal["unavailable"], Values: col(accepted(func(x scenario.Sample) float64 { return x.P99 }))},
		},
	}.svg())
	if sc.Backend.Service != "" {
		// The queue can be a hundred times the slots: it gets the right-hand scale, so the
		// capacity line stays readable beside the work in flight it bounds. A gauge that
		// could not be read is a gap.
		gauge := func(f func(scenario.Sample) int) []float64 {
			return col(func(x scenario.Sample) float64 {
				if v := f(x); v >= 0 {
					return float64(v)
				}
				return math.NaN()
			})
		}
		out = append(out, chart{
			Title: "Backend (" + sc.Backend.Service + ") work in flight vs capacity", Unit: "requests", RightUnit: "queued", Bands: bands,
			Lines: []line{
				{Label: "in flight", Color: pal["blue"], Values: gauge(func(x scenario.Sample) int { return x.BackendInFlight })},
				{Label: "capacity (slots)", Color: pal["ink"], Dashed: true, Values: gauge(func(x scenario.Sample) int { return x.BackendCapacity })},
				{Label: "queued (right scale)", Color: pal["unavailable"], Right: true, Values: gauge(func(x scenario.Sample) int { return x.BackendQueued })},
			},
		}.svg())
	}
	// The gateway's decisions, in the colours the playground's page draws them in.
	if paths := decisionPaths(s); len(paths) > 0 {
		var lines []line
		help := map[string]string{}
		for _, p := range paths {
			d := scenario.DescribePath(p)
			lines = append(lines, line{Label: p, Color: d.Colour, Values: col(func(x scenario.Sample) float64 { return x.Decisions[p] })})
			help[p] = d.Help
		}
		out = append(out, chart{Title: "Limiter decisions by path", Unit: "decisions/s", Stacked: true, Bands: bands, Lines: lines, Help: help}.svg())
	}
	if len(sc.Counters) > 0 {
		// Counts per second and levels apart, as the page draws them: their scales differ.
		for _, kind := range []string{"count", "gauge"} {
			var lines []line
			for _, c := range sc.Counters {
				if (c.Kind == "gauge") != (kind == "gauge") {
					continue
				}
				label := c.Label
				if label == "" {
					label = c.Name
				}
				lines = append(lines, line{Label: label, Color: scenario.SeriesCycle[len(lines)%len(scenario.SeriesCycle)],
					Values: col(func(x scenario.Sample) float64 { return x.Counters[c.Name] })})
			}
			if len(lines) == 0 {
				continue
			}
			title, unit := "The scenario's own counts", "per second"
			if kind == "gauge" {
				title, unit = "The scenario's own levels", "at the end of each second"
			}
			out = append(out, chart{Title: title, Unit: unit, Bands: bands, Lines: lines}.svg())
		}
	}
	return out
}

// refusedLabel names the other 4xx answers: the refusals the scenario expects, when it says.
func refusedLabel(sc scenario.Scenario) string {
	if len(sc.Client.Expected) == 0 {
		return "other 4xx"
	}
	var parts []string
	for _, e := range sc.Client.Expected {
		parts = append(parts, fmt.Sprintf("%d %s", e.Status, e.Meaning))
	}
	return "expected 4xx (" + strings.Join(parts, ", ") + ")"
}

// decisionPaths are the paths of the gateway's decisions the series shows, in stacking
// order; none when they were not read.
func decisionPaths(s []scenario.Sample) []string {
	seen := map[string]bool{}
	for _, x := range s {
		for p := range x.Decisions {
			seen[p] = true
		}
	}
	return scenario.SortPaths(slices.Collect(maps.Keys(seen)))
}

// band is a phase's stretch of the series.
type band struct {
	Name     string
	From, To int // sample indexes, To exclusive
}

func phaseBands(s []scenario.Sample) []band {
	var out []band
	for i, x := range s {
		if len(out) == 0 || out[len(out)-1].Name != x.Phase {
			out = append(out, band{Name: x.Phase, From: i})
		}
		out[len(out)-1].To = i + 1
	}
	return out
}

// fmtAt writes an event's time since the run started.
func fmtAt(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func fmtNum(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"at": fmtAt, "num": fmtNum,
	"rate": func(n int, secs float64) string {
		if secs == 0 {
			return "0"
		}
		return fmt.Sprintf("%.1f", float64(n)/secs)
	},
	"ms": func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"withoutStore": func(d map[string]float64) string {
		if len(d) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f%%", 100*scenario.WithoutStore(d))
	},
}).Parse(pageHTML))

const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Scenario.Title}} — {{.Result.Profile}} — BoxOffice scenario report</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
.meta{color:#555}.pass{color:#006b4f;font-weight:600}.fail{color:#a33a00;font-weight:600}
table{border-collapse:collapse;margin:.5rem 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:right}th:first-child,td:first-child{text-align:left}
figure{margin:1rem 0}figcaption{font-weight:600;margin-bottom:.3rem}
.legend span{margin-right:1rem;white-space:nowrap}.help{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem;font-size:.9rem;color:#555}.help dt{font-weight:600}.help dd{margin:0}.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-1px}
code{background:#f3f3f3;padding:0 .2rem}
</style>
</head>
<body>
<h1>{{.Scenario.Title}}</h1>
<p class="meta">scenario <code>{{.Scenario.Name}}</code>, profile <code>{{.Result.Profile}}</code>{{with .ProfileTitle}} ({{.}}){{end}}, started {{.Result.Started.Format "2006-01-02 15:04:05 MST"}} —
{{if .Passed}}<span class="pass">every expectation met</span>{{else if .Result.Stopped}}<span class="fail">stopped before the end</span>{{else}}<span class="fail">an expectation was missed</span>{{end}}</p>
{{range .Explainer}}<p>{{.}}</p>{{end}}
{{with .Scenario.DocsPath}}<p>The lesson: <code>{{.}}</code> in the BoxOffice repository.</p>{{end}}
{{with .Result.Err}}<p class="fail">The run failed: {{.}}</p>{{end}}

<h2>Expectations</h2>
{{if .Result.Expectations}}<table>
<tr><th>expectation</th><th>want</th><th>got</th><th></th></tr>
{{range .Result.Expectations}}<tr><td>{{.Name}}</td><td>{{.Want}}</td><td>{{.Got}}</td><td>{{if .Passed}}<span class="pass">met</span>{{else}}<span class="fail">missed</span>{{end}}</td></tr>
{{end}}</table>{{else}}<p>Not checked.</p>{{end}}

<h2>Charts</h2>
{{range .Charts}}{{.}}{{end}}

<h2>Phases</h2>
<table>
<tr><th>phase</th><th>seconds</th><th>sent</th><th>requests</th><th>2xx</th><th>429</th><th>503</th><th>5xx</th><th>other 4xx</th><th>errors</th><th>timeouts</th><th>goodput/s</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th>{{if .Decisions}}<th>limiter decisions without the store</th>{{end}}</tr>
{{range .Result.Phases}}<tr><td>{{.Phase}}</td><td>{{.Seconds}}</td><td>{{.Sent}}</td><td>{{.Requests}}</td><td>{{.OK}}</td><td>{{.TooMany}}</td><td>{{.Unavailable}}</td><td>{{.ServerErrors}}</td><td>{{.ClientErrors}}</td><td>{{.Errors}}</td><td>{{.Timeouts}}</td><td>{{rate .Goodput .Seconds}}</td><td>{{ms .P50}}</td><td>{{ms .P95}}</td><td>{{ms .P99}}</td>{{if $.Decisions}}<td>{{withoutStore .Decisions}}</td>{{end}}</tr>
{{end}}{{with .Result.Totals}}<tr><td><b>whole run</b></td><td>{{.Seconds}}</td><td>{{.Sent}}</td><td>{{.Requests}}</td><td>{{.OK}}</td><td>{{.TooMany}}</td><td>{{.Unavailable}}</td><td>{{.ServerErrors}}</td><td>{{.ClientErrors}}</td><td>{{.Errors}}</td><td>{{.Timeouts}}</td><td>{{rate .Goodput .Seconds}}</td><td>{{ms .P50}}</td><td>{{ms .P95}}</td><td>{{ms .P99}}</td>{{if $.Decisions}}<td>{{withoutStore .Decisions}}</td>{{end}}</tr>{{end}}
</table>
{{if .Streams}}<h3>By stream</h3>
<table>
<tr><th>phase</th><th>stream</th><th>requests</th><th>2xx</th><th>429</th><th>goodput/s</th><th>p50 ms</th><th>p99 ms</th></tr>
{{range $ph := .Result.Phases}}{{range $name := $.Streams}}{{with index $ph.Streams $name}}<tr><td>{{$ph.Phase}}</td><td>{{$name}}</td><td>{{.Requests}}</td><td>{{.OK}}</td><td>{{.TooMany}}</td><td>{{rate .Goodput .Seconds}}</td><td>{{ms .P50}}</td><td>{{ms .P99}}</td></tr>
{{end}}{{end}}{{end}}</table>{{end}}
<p class="meta">Phases leave out their first seconds (settle) while the previous phase's queue drains. Latency is of accepted (2xx) requests. Other 4xx are answered refusals{{with .Scenario.Client.Expected}} (this scenario expects{{range $i, $e := .}}{{if $i}},{{end}} {{$e.Status}} {{$e.Meaning}}{{end}}){{end}}; errors are attempts that got no answer (transport errors, arrivals dropped).</p>

{{if .Counters}}<h2>Counters</h2>
<table><tr><th>counter</th><th>whole run</th></tr>
{{range .Counters}}<tr><td>{{.}}</td><td>{{num (index $.Result.Totals.Counters .)}}</td></tr>
{{end}}</table>{{end}}

<h2>Policy changes</h2>
{{if .Result.Audit}}<p class="meta">The run's changes to the gateway's policy, newest first, as its audit trail recorded them (<code>GET /admin/audit?actor={{(index .Result.Audit 0).Actor}}</code> shows each with the element before and after).</p>
<table><tr><th>when</th><th>change</th><th>kind</th><th>id</th><th>action</th></tr>
{{range .Result.Audit}}<tr><td>{{.At.Format "15:04:05.000"}}</td><td>{{.ChangeID}}</td><td>{{.Kind}}</td><td>{{.ID}}</td><td>{{.Action}}</td></tr>
{{end}}</table>{{else}}<p class="meta">The gateway's audit trail recorded no change by this run.</p>{{end}}

<h2>Timeline</h2>
<table><tr><th>at</th><th>kind</th><th>what</th></tr>
{{range .Result.Events}}<tr><td>{{at .At}}</td><td>{{.Kind}}</td><td style="text-align:left">{{.What}}</td></tr>
{{end}}</table>
</body>
</html>
`
