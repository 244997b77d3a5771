package testkit

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// operations are the keys of an OpenAPI path item that are operations; the others
// (parameters, summary, servers, …) are shared by a path's operations.
var operations = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// CheckOpenAPI fails the test unless the OpenAPI 3 document at specPath describes exactly
// routes, each "METHOD /pattern" (httpapi.Routes.Endpoints): every documented operation is
// served, and every served route is documented. A service's test calls it with its own route
// table, so the document cannot drift from the code.
func CheckOpenAPI(t testing.TB, specPath string, routes []string) {
	t.Helper()
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatalf("read openapi: %v", err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse openapi %s: %v", specPath, err)
	}
	var documented []string
	for path, item := range doc.Paths {
		for key := range item {
			if slices.Contains(operations, key) {
				documented = append(documented, strings.ToUpper(key)+" "+path)
			}
		}
	}
	if missing := without(documented, routes); len(missing) > 0 {
		t.Errorf("%s documents %q, which the route table does not serve", specPath, missing)
	}
	if missing := without(routes, documented); len(missing) > 0 {
		t.Errorf("the route table serves %q, which %s does not document", missing, specPath)
	}
}

// without returns the sorted members of a not in b.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
