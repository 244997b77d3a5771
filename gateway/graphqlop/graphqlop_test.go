package graphqlop

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/platform/problem"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, query, operationName string
		wantType                   string
		wantFields                 []string
	}{
		{"a query", `query Events { events { id } me { id } }`, "", Query, []string{"events", "me"}},
		{"shorthand query", `{ events { id } }`, "", Query, []string{"events"}},
		{"one mutation", `mutation { placeHold(eventId: "e1", quantity: 2) { id } }`, "", Mutation, []string{"placeHold"}},
		{"variables", `mutation Hold($e: ID!, $q: Int) { placeHold(eventId: $e, quantity: $q) { id } }`, "", Mutation, []string{"placeHold"}},
		{"named operation chosen", `query A { events { id } } mutation B { createOrder(holdId: "h", idempotencyKey: "k") { id } }`, "B", Mutation, []string{"createOrder"}},
		{"the other named operation", `query A { events { id } } mutation B { createOrder(holdId: "h", idempotencyKey: "k") { id } }`, "A", Query, []string{"events"}},
		{"aliases are separate calls", `mutation { a: placeHold(eventId: "e") { id } b: placeHold(eventId: "e") { id } }`, "", Mutation, []string{"placeHold", "placeHold"}},
		{"one response key is one call", `mutation { placeHold(eventId: "e") { id } placeHold(eventId: "e") { state } }`, "", Mutation, []string{"placeHold"}},
		{"several root fields", `mutation { joinQueue(eventId: "e") { position } placeHold(eventId: "e") { id } }`, "", Mutation, []string{"joinQueue", "placeHold"}},
		{"fragment on Mutation", `mutation { ...Buy } fragment Buy on Mutation { placeHold(eventId: "e") { id } x: checkout(holdId: "h", idempotencyKey: "k") { id } }`, "", Mutation, []string{"placeHold", "checkout"}},
		{"fragment spread twice", `mutation { ...Buy ...Buy } fragment Buy on Mutation { placeHold(eventId: "e") { id } }`, "", Mutation, []string{"placeHold"}},
		{"inline fragment", `mutation { ... on Mutation { placeHold(eventId: "e") { id } } }`, "", Mutation, []string{"placeHold"}},
		{"skipped fields still count", `mutation($s: Boolean!) { placeHold(eventId: "e") @skip(if: $s) { id } }`, "", Mutation, []string{"placeHold"}},
		{"introspection runs nothing", `mutation { __typename }`, "", Mutation, nil},
		{"fragment cycle ends", `mutation { ...A } fragment A on Mutation { placeHold(eventId: "e") { id } ...A }`, "", Mutation, []string{"placeHold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := Parse(Request{Query: tt.query, OperationName: tt.operationName}, CostModel{})
			if err != nil {
				t.Fatalf("Parse = %v, want no error", err)
			}
			if op.Type != tt.wantType || !slices.Equal(op.Fields, tt.wantFields) {
				t.Errorf("Parse = %s %v, want %s %v", op.Type, op.Fields, tt.wantType, tt.wantFields)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, query, operationName string
		wantField, wantIn          string
	}{
		{"no document", "", "", "query", "got none"},
		{"not GraphQL", `mutation { placeHold(eventId: "e1" { id } }`, "", "query", "line 1, column 36"},
		{"quoted text left out", `mutation { "secret" }`, "", "query", "found String"},
		{"unterminated", `{ events(q: "abc`, "", "query", "not valid GraphQL"},
		{"fragments only", `fragment F on Mutation { placeHold { id } }`, "", "query", "holds none"},
		{"several operations, no name", `query A { events { id } } mutation B { placeHold { id } }`, "", "operationName", "2 operations"},
		{"unknown operation name", `mutation B { placeHold { id } }`, "C", "operationName", "no operation"},
		{"subscription", `subscription { holdExpired { id } }`, "", "query", "subscriptions are not offered"},
		{"undefined fragment", `mutation { ...Buy }`, "", "query", "fragment Buy is not defined"},
		{"too many tokens", "{" + strings.Repeat(" a", MaxTokens) + " }", "", "query", "not valid GraphQL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(Request{Query: tt.query, OperationName: tt.operationName}, CostModel{})
			var pe *problem.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %v, want a *problem.Error", err)
			}
			if pe.Code != problem.Invalid || pe.Field != tt.wantField || !strings.Contains(pe.Message, tt.wantIn) {
				t.Errorf("Parse = %s %s %q, want invalid %s containing %q", pe.Code, pe.Field, pe.Message, tt.wantField, tt.wantIn)
			}
			if strings.Contains(pe.Message, "secret") || strings.Contains(pe.Message, "abc") {
				t.Errorf("Parse = %q, want the document not echoed", pe.Message)
			}
		})
	}
}

func TestFromJSON(t *testing.T) {
	tests := []struct {
		name, body string
		wantType   string
		wantFields []string
		wantErr    string // the field at fault; "" for none
	}{
		{"query and variables", `{"query":"mutation($e: ID!) { placeHold(eventId: $e) { id } }","variables":{"e":"e1"}}`, Mutation, []string{"placeHold"}, ""},
		{"operationName", `{"query":"query A { me { id } } mutation B { checkout(holdId: \"h\", idempotencyKey: \"k\") { id } }","operationName":"B"}`, Mutation, []string{"checkout"}, ""},
		// encoding/json, as gqlgen decodes: names fold, the last duplicate wins.
		{"names as gqlgen reads them", `{"query":"{ me { id } }","QUERY":"mutation { placeHold(eventId: \"e\") { id } }"}`, Mutation, []string{"placeHold"}, ""},
		{"not JSON", `query=mutation`, "", nil, "body"},
		{"a batch", `[{"query":"{ me { id } }"}]`, "", nil, "body"},
		{"no query", `{"variables":{}}`, "", nil, "query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := FromJSON([]byte(tt.body))
			var op Operation
			if err == nil {
				op, err = Parse(req, CostModel{})
			}
			if tt.wantErr != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Field != tt.wantErr {
					t.Fatalf("FromJSON = %v, want an invalid %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromJSON = %v, want no error", err)
			}
			if op.Type != tt.wantType || !slices.Equal(op.Fields, tt.wantFields) {
				t.Errorf("FromJSON = %s %v, want %s %v", op.Type, op.Fields, tt.wantType, tt.wantFields)
			}
		})
	}
}
