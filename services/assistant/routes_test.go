package assistant

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi/assistant.yaml and the route table equal: every
// documented path and method is served, and every served route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	b, err := os.ReadFile("../../docs/openapi/assistant.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse openapi: %v", err)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, r := range routeTable(nil, nil) {
		served = append(served, r.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("openapi documents %q,\nroute table serves %q; want the same", documented, served)
	}
}
