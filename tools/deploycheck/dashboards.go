package deploycheck

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

// replicaViews are gauges each gateway replica exports about the same things, the upstream
// instances it probes: one replica's series already count every instance, so adding them up
// over the replicas counts each instance once per replica.
var replicaViews = []string{"upstream_routable"}

var (
	promAggregation = regexp.MustCompile(`\b(sum|count)\s*(?:(by|without)\s*\(([^)]*)\)\s*)?\(`)
	promPostGroup   = regexp.MustCompile(`^\s*(by|without)\s*\(([^)]*)\)`)
)

// SumsOverReplicas returns the replicaViews that expr adds up over the gateway replicas: a
// sum or count over them that drops the instance label, which Prometheus sets to the scrape
// target, one per replica (a metric's own instance label, the upstream's, is stored as
// exported_instance). Keep it (sum by (service, instance)), then combine the replicas with
// max, min or avg.
func SumsOverReplicas(expr string) []string {
	e := promString.ReplaceAllString(expr, `""`)
	var out []string
	for _, m := range promAggregation.FindAllStringSubmatchIndex(e, -1) {
		open := m[1] - 1
		end := closingParen(e, open)
		if end < 0 {
			continue
		}
		grouping, labels := "", ""
		if m[4] >= 0 {
			grouping, labels = e[m[4]:m[5]], e[m[6]:m[7]]
		} else if g := promPostGroup.FindStringSubmatch(e[end+1:]); g != nil {
			grouping, labels = g[1], g[2]
		}
		keepsInstance := slices.ContainsFunc(strings.Split(labels, ","), func(l string) bool { return strings.TrimSpace(l) == "instance" })
		if grouping == "without" {
			keepsInstance = !keepsInstance
		}
		if keepsInstance {
			continue
		}
		for _, metric := range PromQLMetrics(e[open+1 : end]) {
			if slices.Contains(replicaViews, metric) && !slices.Contains(out, metric) {
				out = append(out, metric)
			}
		}
	}
	return out
}

// closingParen returns the index of the parenthesis that closes the one at open, -1 if none.
func closingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}
