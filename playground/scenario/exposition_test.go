package scenario

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// The gateway's own exposition, as its admin /metrics serves it (trimmed): the decisions'
// labels in the exporter's order, a family with a longer name after them, a histogram.
const gatewayMetrics = `# HELP ratelimit_decisions_total Rule decisions by rule, outcome and path.
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{outcome="allowed",path="store",rule="api-per-ip"} 120
ratelimit_decisions_total{outcome="denied",path="store",rule="login-per-account"} 7
ratelimit_decisions_total{outcome="allowed",path="fallback",rule="api-per-ip"} 30
ratelimit_decisions_total{outcome="denied",path="fail_closed",rule="login-per-ip"} 4
ratelimit_decisions_total_created{outcome="allowed",path="store",rule="api-per-ip"} 1.7e+09
# TYPE ratelimit_decision_duration_seconds histogram
ratelimit_decision_duration_seconds_bucket{le="0.0005"} 3
`

func TestReadMetrics(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		names []string
		want  []string // each sample as name{sorted labels}=value
	}{
		{"only the named family, not one whose name it begins", gatewayMetrics, []string{metricDecisions}, []string{
			`ratelimit_decisions_total{outcome=allowed,path=store,rule=api-per-ip}=120`,
			`ratelimit_decisions_total{outcome=denied,path=store,rule=login-per-account}=7`,
			`ratelimit_decisions_total{outcome=allowed,path=fallback,rule=api-per-ip}=30`,
			`ratelimit_decisions_total{outcome=denied,path=fail_closed,rule=login-per-ip}=4`,
		}},
		{"several families, in the order they come", "b 2\na{x=\"1\"} 1\nc 3\n", []string{"a", "b"}, []string{"b{}=2", "a{x=1}=1"}},
		{"no labels, a timestamp", "up 1 1700000000000\n", []string{"up"}, []string{"up{}=1"}},
		{"empty braces", "up{} 1\n", []string{"up"}, []string{"up{}=1"}},
		{"labels in any order, spaces, a trailing comma", `m{ b="2" , a="1", } 5`, []string{"m"}, []string{"m{a=1,b=2}=5"}},
		{"escaped quote, backslash and newline", `m{v="say \"hi\"\\\n"} 1`, []string{"m"}, []string{"m{v=say \"hi\"\\\n}=1"}},
		{"braces and commas inside a value", `m{route="/v1/events/{id}",x="a,b"} 2`, []string{"m"}, []string{"m{route=/v1/events/{id},x=a,b}=2"}},
		{"special values", "m{k=\"a\"} +Inf\nm{k=\"b\"} NaN\nm{k=\"c\"} -1.5e3\n", []string{"m"}, []string{"m{k=a}=+Inf", "m{k=b}=NaN", "m{k=c}=-1500"}},
		{"comments, blank lines and tabs", "# a comment\n\n\tm{k=\"v\"}\t4\n", []string{"m"}, []string{"m{k=v}=4"}},
		{"nothing named", gatewayMetrics, []string{"absent"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readMetrics(strings.NewReader(tt.text), tt.names...)
			if err != nil {
				t.Fatalf("readMetrics = %v", err)
			}
			var lines []string
			for _, s := range got {
				lines = append(lines, sampleString(s))
			}
			if strings.Join(lines, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("readMetrics(%q) =\n%s\nwant\n%s", tt.names, strings.Join(lines, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func sampleString(s metricSample) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(s.labels)) {
		ls = append(ls, k+"="+s.labels[k])
	}
	v := fmt.Sprint(s.value)
	switch {
	case math.IsInf(s.value, 1):
		v = "+Inf"
	case math.IsNaN(s.value):
		v = "NaN"
	}
	return s.name + "{" + strings.Join(ls, ",") + "}=" + v
}

// A line of a named family that does not parse is an error that names it; a broken line of
// another family is not read at all.
func TestReadMetricsRefusesABrokenLine(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"no value", `m{k="v"}`, "want a value"},
		{"a value that is not a number", `m{k="v"} many`, `value "many"`},
		{"an unquoted label value", `m{k=v} 1`, "want a quoted value"},
		{"an unclosed label value", `m{k="v} 1`, "no closing quote"},
		{"a bad label name", `m{1k="v"} 1`, "want a label name"},
		{"labels run together", `m{a="1" b="2"} 1`, "want , or }"},
		{"too many fields", `m 1 2 3`, "at most a timestamp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "other{broken 1\n# fine so far\n" + tt.line + "\n"
			_, err := readMetrics(strings.NewReader(text), "m")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("readMetrics(%q) = %v, want an error at line 3 containing %q", tt.line, err, tt.want)
			}
		})
	}
}
