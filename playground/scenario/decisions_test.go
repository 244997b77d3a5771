package scenario

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestDecisionCountsPerSecond(t *testing.T) {
	var d decisionCounts
	steps := []struct {
		name   string
		totals map[string]float64
		want   map[string]float64
	}{
		{"the first scrape is the baseline", map[string]float64{"store": 100}, nil},
		{"a second's decisions", map[string]float64{"store": 150, "fallback": 5}, map[string]float64{"store": 50, "fallback": 5}},
		{"a second without decisions", map[string]float64{"store": 150, "fallback": 5}, map[string]float64{"store": 0, "fallback": 0}},
		{"the gateway restarted: the new totals count", map[string]float64{"store": 8}, map[string]float64{"store": 8}},
		{"a failed scrape shows a gap", nil, nil},
		{"and the next is a new baseline, not a spike", map[string]float64{"store": 500}, nil},
		{"then seconds again", map[string]float64{"store": 530}, map[string]float64{"store": 30}},
	}
	for _, st := range steps {
		if got := d.next(st.totals); !maps.Equal(got, st.want) || (got == nil) != (st.want == nil) {
			t.Errorf("%s: next(%v) = %v, want %v", st.name, st.totals, got, st.want)
		}
	}
}

func TestWithoutStore(t *testing.T) {
	tests := []struct {
		decisions map[string]float64
		want      float64
	}{
		{nil, 0},
		{map[string]float64{"store": 90, "lease": 10}, 0},
		{map[string]float64{"store": 50, "fallback": 30, "fail_closed": 20}, 0.5},
		{map[string]float64{"local_deny": 10, "fallback": 10}, 0.5}, // denied from the store's last answer: not without it
		{map[string]float64{"some-new-path": 10, "fallback": 10}, 0.5},
	}
	for _, tt := range tests {
		if got := WithoutStore(tt.decisions); got != tt.want {
			t.Errorf("WithoutStore(%v) = %v, want %v", tt.decisions, got, tt.want)
		}
	}
}

func TestPathsStackAndKeepTheirColours(t *testing.T) {
	got := SortPaths([]string{"fail_closed", "zeta", "store", "fallback", "alpha", "lease"})
	if want := []string{"store", "lease", "fallback", "fail_closed", "alpha", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("SortPaths = %v, want %v: the listed paths in their order, then the others by name", got, want)
	}
	colours := map[string]string{}
	for _, p := range DecisionPaths {
		if p.Help == "" || p.Colour == "" {
			t.Errorf("path %s has no explanation or no colour", p.Name)
		}
		if other, taken := colours[p.Colour]; taken {
			t.Errorf("paths %s and %s share the colour %s", other, p.Name, p.Colour)
		}
		colours[p.Colour] = p.Name
	}
	// A path the list does not know gets one of the other colours, always the same (the
	// page computes it the same way: the sum of the name's bytes).
	if c := DescribePath("local-per-tenant"); c.Colour != OtherPathColour("local-per-tenant") || c.Help != OtherPathHelp || !slices.Contains(OtherPathColours, c.Colour) {
		t.Errorf("DescribePath(an unlisted path) = %+v, want an other colour and the other help", c)
	}
	if got, want := OtherPathColour("ab"), OtherPathColours[(97+98)%len(OtherPathColours)]; got != want {
		t.Errorf("OtherPathColour(ab) = %s, want %s", got, want)
	}
	if !DescribePath("fallback").WithoutStore || !DescribePath("fail_closed").WithoutStore || DescribePath("store").WithoutStore {
		t.Error("fallback and fail_closed, and only they, are decided without the store")
	}
}

// decisionTotals sums the gateway's decisions by path over rules and outcomes, and by
// outcome and rule over paths, from its admin /metrics; a gateway that does not answer gives
// none.
func TestDecisionTotalsScrapesTheGateway(t *testing.T) {
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, gatewayMetrics)
	}))
	defer admin.Close()
	s, err := newSystem(Target{Admin: admin.URL})
	if err != nil {
		t.Fatal(err)
	}
	byPath, byOutcome := s.decisionTotals(context.Background())
	if want := map[string]float64{"store": 127, "fallback": 30, "fail_closed": 4}; !maps.Equal(byPath, want) {
		t.Errorf("decisionTotals by path = %v, want %v", byPath, want)
	}
	want := map[string]float64{"allowed:api-per-ip": 150, "denied:login-per-account": 7, "denied:login-per-ip": 4}
	if !maps.Equal(byOutcome, want) {
		t.Errorf("decisionTotals by outcome = %v, want %v", byOutcome, want)
	}

	admin.Close()
	if byPath, byOutcome := s.decisionTotals(context.Background()); byPath != nil || byOutcome != nil {
		t.Errorf("decisionTotals of a gateway that is gone = %v, %v; want nil", byPath, byOutcome)
	}
	if byPath, byOutcome := (&system{}).decisionTotals(context.Background()); byPath != nil || byOutcome != nil {
		t.Errorf("decisionTotals without an admin API = %v, %v; want nil", byPath, byOutcome)
	}
}
