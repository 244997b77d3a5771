package policy

import (
	"errors"
	"strings"
	"testing"
)

// withGraphQL is base with a GraphQL route whose graphql field is mapping, and routes for
// it to map.
func withGraphQL(mapping string) string {
	doc := strings.Replace(base, "limits:\n  - {id: holds", "limits:\n  - {id: refresh, key: \"json:email\", rate: 5/1m}\n  - {id: holds", 1)
	return strings.Replace(doc, "routes:\n", `routes:
  - id: graphql
    match: {path: /graphql}
    service: inventory
    auth: user
    graphql: `+mapping+`
  - {id: no-limits, match: {method: GET, path: /v1/holds}, service: inventory, auth: user}
  - {id: by-email, match: {method: POST, path: /v1/refresh}, service: auth, auth: none, limits: [refresh]}
`, 1)
}

func TestGraphQLMutationsCompile(t *testing.T) {
	s := mustCompile(t, withGraphQL("{mutations: {placeHold: holds}}"))
	got := s.Route("graphql").Mutations
	if len(got) != 1 || got["placeHold"] != s.Route("holds") {
		t.Errorf("Mutations = %v, want placeHold: the holds route", got)
	}
	if m := s.Route("holds").Mutations; m != nil {
		t.Errorf("holds.Mutations = %v, want nil for a REST route", m)
	}
	if m := mustCompile(t, withGraphQL("{}")).Route("graphql").Mutations; m == nil || len(m) != 0 {
		t.Errorf("Mutations of graphql: {} = %v, want an empty map (every mutation refused)", m)
	}
}

func TestGraphQLMutationsRefused(t *testing.T) {
	tests := []struct {
		name, mapping, wantField, wantIn string
	}{
		{"unknown route", "{mutations: {placeHold: hold}}", "routes[graphql].graphql.mutations.placeHold", `route "hold" is not in the policy`},
		{"route without limits", "{mutations: {releaseHold: no-limits}}", "routes[graphql].graphql.mutations.releaseHold", "has no limits"},
		{"a GraphQL route", "{mutations: {placeHold: graphql}}", "routes[graphql].graphql.mutations.placeHold", "is a GraphQL route"},
		{"a JSON-keyed limit", "{mutations: {refresh: by-email}}", "routes[graphql].graphql.mutations.refresh", "keyed on the JSON body"},
		{"not a field name", `{mutations: {"place-hold": holds}}`, "routes[graphql].graphql.mutations", "want a GraphQL field name"},
		{"unknown member", "{mutation: {placeHold: holds}}", "", "mutation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(withGraphQL(tt.mapping)))
			if err == nil {
				_, err = Compile(p, nil)
			}
			if err == nil {
				t.Fatalf("Compile = nil, want an error containing %q", tt.wantIn)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("Compile = %v, want it to contain %q", err, tt.wantIn)
			}
			var fe *FieldError
			if tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField) {
				t.Errorf("Compile = %v, want a *FieldError on %s", err, tt.wantField)
			}
		})
	}
}
