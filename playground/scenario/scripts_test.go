package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

// flashSaleDoc is a valid flash-sale scenario whose scripts hold through the knob's door; the
// cases below change one thing each.
const flashSaleDoc = `
name: s
title: T
explainer: E
docs: docs/x.md
driver: flash-sale
flash_sale: {seats: 20, fans: 4, greedy_share: 0.5, greedy_attempts: 8}
streams: [{name: fans, identity: user, count: 4}]
knobs:
  - {name: script_holds_via, kind: enum, options: [rest, graphql, graphql-mobile, graphql-web], default: rest}
profiles:
  - name: p
    phases:
      - {name: one, duration: 2s, rate: 10, knobs: {script_holds_via: graphql}}
    expect:
      - {name: e, left: {metric: "counter:429:holds-per-account"}, op: ">=", value: 1}
`

func TestParseChecksTheScriptDoors(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"valid", "", "", ""},
		{"a door the driver does not know", "graphql-web]", "graphql-web, soap]",
			`knobs[script_holds_via]: option "soap": want rest, graphql, graphql-mobile, graphql-web`},
		{"not an enum", "kind: enum, options: [rest, graphql, graphql-mobile, graphql-web]", "kind: int",
			`knobs[script_holds_via]: kind "int": want enum`},
		{"a default outside the options", "default: rest}", "default: grpc}", `knobs[script_holds_via].default: "grpc": want one of`},
		{"a phase value outside the options", "{script_holds_via: graphql}", "{script_holds_via: soap}",
			`knobs.script_holds_via: "soap": want one of rest, graphql, graphql-mobile, graphql-web`},
		{"another driver", "driver: flash-sale", "driver: request\nrequest: {method: GET, path: /v1/events, route: events}",
			`knobs[script_holds_via]: only the flash-sale driver runs scripts, not "request"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parseWants(t, strings.Replace(flashSaleDoc, tt.old, tt.new, 1), tt.want)
		})
	}
}

func TestScriptDoor(t *testing.T) {
	tests := []struct {
		knob string
		rand float64
		want string
	}{
		{"", 0.1, viaREST},
		{viaREST, 0.1, viaREST},
		{viaGraphQL, 0.1, viaGraphQLMobile},
		{viaGraphQL, 0.7, viaGraphQLWeb},
		{viaGraphQLMobile, 0.7, viaGraphQLMobile},
		{viaGraphQLWeb, 0.1, viaGraphQLWeb},
	}
	for _, tt := range tests {
		if got := scriptDoor(tt.knob, func() float64 { return tt.rand }); got != tt.want {
			t.Errorf("scriptDoor(%q, rand %v) = %s, want %s", tt.knob, tt.rand, got, tt.want)
		}
	}
}

func TestScriptHoldSpeaksEachDoor(t *testing.T) {
	tests := []struct {
		door, url, body string
	}{
		{viaREST, "http://gw/v1/events/evt-1/holds", `{"seats":["A-1-2"]}`},
		{viaGraphQLMobile, "http://gw/graphql/mobile",
			`{"query":"` + placeHoldMobile + `","variables":{"event":"evt-1","seats":["A-1-2"]}}`},
		{viaGraphQLWeb, "http://gw/graphql/web",
			`{"query":"` + placeHoldWeb + `","variables":{"input":{"eventId":"evt-1","seats":["A-1-2"]}}}`},
	}
	for _, tt := range tests {
		url, body := scriptHold(tt.door, "http://gw", "evt-1", "A-1-2")
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if url != tt.url || string(b) != tt.body {
			t.Errorf("scriptHold(%s) = %s %s, want %s %s", tt.door, url, b, tt.url, tt.body)
		}
	}
}

func TestUnreadable(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"a refusal by inventory", 200, `{"errors":[{"message":"no admission pass","extensions":{"code":"FORBIDDEN"}}],"data":null}`, ""},
		{"a hold", 200, `{"data":{"placeHold":{"id":"h-1"}}}`, ""},
		{"the gateway's 429", 429, `{"title":"Too many requests","violated-policies":["holds-per-account"],"errors":[{"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`, ""},
		{"not JSON", 502, `bad gateway`, ""},
		{"a field the schema lacks", 422, `{"errors":[{"message":"Unknown argument seat","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`,
			"GRAPHQL_VALIDATION_FAILED: Unknown argument seat"},
		{"not GraphQL", 422, `{"errors":[{"message":"Unexpected Name","extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`,
			"GRAPHQL_PARSE_FAILED: Unexpected Name"},
	}
	for _, tt := range tests {
		if got := unreadable(tt.status, []byte(tt.body)); got != tt.want {
			t.Errorf("unreadable(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
