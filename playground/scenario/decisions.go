package scenario

import (
	"context"
	"slices"
	"strings"
)

// The gateway's rate limiter counts every rule decision in ratelimit_decisions_total{rule,
// outcome, path}, path saying how the decision was reached. A run reads it from the gateway's
// admin /metrics once a second (Sample.Decisions), so a student sees the limiter degrade:
// decisions leaving the store for the fallback while Redis is away, and coming back. In a
// deployment with several gateway replicas this is the one the target's admin URL names.
const metricDecisions = "ratelimit_decisions_total"

// DecisionPath describes one path for people: the playground's page and the report draw it in
// Colour and explain it with Help, one sentence for a student.
type DecisionPath struct {
	Name   string `json:"name"`
	Help   string `json:"help"`
	Colour string `json:"colour"`
	// WithoutStore marks the paths taken because the store was unavailable: together they
	// are the share "decided without the store".
	WithoutStore bool `json:"without_store,omitempty"`
}

// DecisionPaths are the paths the playground describes, in the order their bands stack: the
// store at the bottom, the paths taken without it on top, where they show. The colours are
// the Okabe–Ito palette the page uses (colour-blind safe), fallback and fail_closed in the
// warm ones the page gives 429 and 503. A path not listed is drawn all the same, in
// OtherPathColour's colour, after these.
var DecisionPaths = []DecisionPath{
	{Name: "store", Colour: "#0072b2", Help: "Redis, shared by every gateway replica, decided: the normal path."},
	{Name: "lease", Colour: "#56b4e9", Help: "Decided on tokens this replica took from Redis earlier, in a batch, and spends locally."},
	{Name: "local_deny", Colour: "#cc79a7", Help: "Denied without asking Redis: it already said this key is over its limit until its reset."},
	{Name: "memory", Colour: "#009e73", Help: "Decided in this replica's memory by a limit that is local on purpose, such as the per-IP pre-limit (rule local-per-ip) in front of the shared rules: not a fallback."},
	{Name: "shadow", Colour: "#8a93a3", Help: "A shadow rule would have denied this request: it passed, and the denial was only counted."},
	{Name: "fallback", Colour: "#e69f00", WithoutStore: true, Help: "Redis was unavailable (no answer in time, or the breaker stopped asking): this replica decided alone, at the limit divided by the number of replicas."},
	{Name: "fail_closed", Colour: "#d55e00", WithoutStore: true, Help: "Redis was unavailable and the rule guards logins or sign-ups: refused with 503 rather than allow unlimited guessing."},
}

// OtherPathColours are the colours of paths DecisionPaths does not list. Both the page and
// the report pick one by the path's name (OtherPathColour), so a path keeps its colour.
var OtherPathColours = []string{"#1d2330", "#7a5c3e", "#5b6b8c"}

// OtherPathHelp explains a path DecisionPaths does not list.
const OtherPathHelp = "A path this playground does not describe yet: see gateway/ratelimit."

// OtherPathColour is the colour of a path DecisionPaths does not list: the sum of its bytes
// picks one of OtherPathColours (runner.js does the same).
func OtherPathColour(name string) string {
	sum := 0
	for i := range len(name) {
		sum += int(name[i])
	}
	return OtherPathColours[sum%len(OtherPathColours)]
}

// DescribePath returns the path's description, DecisionPaths' or an unlisted path's.
func DescribePath(name string) DecisionPath {
	if i := slices.IndexFunc(DecisionPaths, func(p DecisionPath) bool { return p.Name == name }); i >= 0 {
		return DecisionPaths[i]
	}
	return DecisionPath{Name: name, Colour: OtherPathColour(name), Help: OtherPathHelp}
}

// SortPaths orders path names as their bands stack: DecisionPaths' order, then the others
// by name.
func SortPaths(names []string) []string {
	rank := func(n string) int {
		if i := slices.IndexFunc(DecisionPaths, func(p DecisionPath) bool { return p.Name == n }); i >= 0 {
			return i
		}
		return len(DecisionPaths)
	}
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}

// WithoutStore is the share of decisions by path taken without the store (the paths
// DecisionPaths marks WithoutStore); 0 without decisions.
func WithoutStore(decisions map[string]float64) float64 {
	var all, without float64
	for path, n := range decisions {
		all += n
		if DescribePath(path).WithoutStore {
			without += n
		}
	}
	return ratio(without, all)
}

// decisionCounts turns the gateway's running totals into counts per second. It is used by
// the sampler alone.
type decisionCounts struct {
	// last holds the totals by path of the previous scrape; nil before the first and after
	// a scrape that failed.
	last map[string]float64
}

// next returns the decisions by path since the previous totals and keeps totals for the next
// call. With no previous totals (the first scrape, or the first after one failed) it returns
// nil: the counts since an unknown moment would show as a spike that never happened. A path
// whose total went down (the gateway restarted) counts its new total.
func (d *decisionCounts) next(totals map[string]float64) map[string]float64 {
	last := d.last
	d.last = totals
	if last == nil || totals == nil {
		return nil
	}
	out := make(map[string]float64, len(totals))
	for path, n := range totals {
		if n >= last[path] {
			n -= last[path]
		}
		out[path] = n
	}
	return out
}

// decisionTotals reads the gateway's decisions so far, summed by path over rules and
// outcomes, and by "<outcome>:<rule>" over paths (a scenario's counters such as
// "unenforced_denied:playground-rate-limiter", the would-deny of a partly enforced limit);
// nil when the target has no admin API or the scrape fails.
func (s *system) decisionTotals(ctx context.Context) (byPath, byOutcome map[string]float64) {
	if s.t.Admin == "" {
		return nil, nil
	}
	samples, err := s.scrapeMetrics(ctx, s.t.Admin+"/metrics", metricDecisions)
	if err != nil {
		return nil, nil
	}
	byPath, byOutcome = map[string]float64{}, map[string]float64{}
	for _, smp := range samples {
		if path := smp.labels["path"]; path != "" {
			byPath[path] += smp.value
		}
		if outcome, rule := smp.labels["outcome"], smp.labels["rule"]; outcome != "" && rule != "" {
			byOutcome[outcome+":"+rule] += smp.value
		}
	}
	return byPath, byOutcome
}
