package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// DashboardQueries returns the PromQL expression of every panel target of a Grafana
// dashboard JSON file, rows' nested panels included.
func DashboardQueries(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	type panel struct {
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", file, err)
	}
	var out []string
	queue := d.Panels
	for len(queue) > 0 {
		var p panel
		if err := json.Unmarshal(queue[0], &p); err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", file, err)
		}
		queue = append(queue[1:], p.Panels...)
		for _, t := range p.Targets {
			if t.Expr != "" {
				out = append(out, t.Expr)
			}
		}
	}
	return out, nil
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promCall     = regexp.MustCompile(`^\s*\(`)
	promMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// promKeywords are PromQL words that are neither functions (followed by a parenthesis)
// nor metrics.
var promKeywords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan"}

// PromQLMetrics returns the metric names an expression selects: every identifier outside
// strings, label matchers, ranges and grouping clauses that is not a function call or a
// keyword. (Enough for dashboards' queries; not a PromQL parser.)
func PromQLMetrics(expr string) []string {
	e := promString.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRange.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if promCall.MatchString(e[loc[1]:]) || slices.Contains(promKeywords, strings.ToLower(name)) || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// PromQLLabels returns the label names an expression groups by or matches on.
func PromQLLabels(expr string) []string {
	e := promString.ReplaceAllString(expr, `""`)
	var out []string
	add := func(l string) {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	for _, m := range promGrouping.FindAllStringSubmatch(e, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			add(l)
		}
	}
	for _, body := range promMatchers.FindAllString(e, -1) {
		for _, m := range promMatcher.FindAllStringSubmatch(body, -1) {
			add(m[1])
		}
	}
	return out
}
