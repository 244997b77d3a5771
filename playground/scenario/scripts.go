package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The doors a flash sale's scripts hold seats through, the values of the script_holds_via
// knob: the REST hold endpoint, one BFF's placeHold mutation, or graphql, each script taking
// one of the two BFFs at random. Whichever the door, a hold attempt spends the account's
// holds-per-account budget: the gateway reads a GraphQL operation and counts each placeHold
// against the limits of the REST route doing the same write (docs/lessons/bff.md).
const (
	viaREST          = "rest"
	viaGraphQL       = "graphql"
	viaGraphQLMobile = "graphql-mobile"
	viaGraphQLWeb    = "graphql-web"
)

// scriptDoors are the values the script_holds_via knob may offer.
var scriptDoors = []string{viaREST, viaGraphQL, viaGraphQLMobile, viaGraphQLWeb}

// The placeHold mutations as each BFF's schema spells them (bff-mobile/graph/schema.graphqls,
// bff-web/graph/schema.graphqls). A script queues for nothing, so it sends no admission pass.
const (
	placeHoldMobile = `mutation PlaceHold($event: ID!, $seats: [ID!]) { placeHold(eventId: $event, seats: $seats) { id } }`
	placeHoldWeb    = `mutation PlaceHold($input: PlaceHoldInput!) { placeHold(input: $input) { id } }`
)

// graphqlRequest is the JSON body of a GraphQL POST.
type graphqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
}

// checkScriptDoors reports what is wrong with a script_holds_via knob: only the flash-sale
// driver runs scripts, and each option must be a door it knows.
func checkScriptDoors(s *Scenario, k KnobSpec) error {
	var errs []string
	if s.Driver != "flash-sale" {
		errs = append(errs, fmt.Sprintf("only the flash-sale driver runs scripts, not %q", s.Driver))
	}
	if k.Kind != "enum" {
		errs = append(errs, fmt.Sprintf("kind %q: want enum", k.Kind))
	}
	for _, o := range k.Options {
		if !slices.Contains(scriptDoors, o) {
			errs = append(errs, fmt.Sprintf("option %q: want %s", o, strings.Join(scriptDoors, ", ")))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("knobs[script_holds_via]: %s", strings.Join(errs, "; "))
}

// scriptDoor is the door one script takes as the knob says now: "" (a scenario without the
// knob) is REST, and graphql picks one of the BFFs with rand, a number in [0, 1).
func scriptDoor(knob string, rand func() float64) string {
	switch knob {
	case "":
		return viaREST
	case viaGraphQL:
		if rand() < 0.5 {
			return viaGraphQLMobile
		}
		return viaGraphQLWeb
	}
	return knob
}

// scriptHold is one hold attempt of a script through door, for one seat of event: the URL
// under the gateway and the JSON body.
func scriptHold(door, gateway, event, seat string) (url string, body any) {
	seats := []string{seat}
	switch door {
	case viaGraphQLMobile:
		return gateway + "/graphql/mobile", graphqlRequest{Query: placeHoldMobile,
			Variables: map[string]any{"event": event, "seats": seats}}
	case viaGraphQLWeb:
		return gateway + "/graphql/web", graphqlRequest{Query: placeHoldWeb,
			Variables: map[string]any{"input": map[string]any{"eventId": event, "seats": seats}}}
	}
	return gateway + "/v1/events/" + event + "/holds", map[string]any{"seats": seats}
}

// unreadable reports why a BFF could not run a script's operation at all (it does not parse
// or fit the schema), or "" when the BFF ran it. Such an answer is the scenario's own
// mistake, not a refusal: the run says so rather than count a hold that never was one.
func unreadable(status int, body []byte) string {
	var answer struct {
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if status == http.StatusTooManyRequests || json.NewDecoder(bytes.NewReader(body)).Decode(&answer) != nil {
		return ""
	}
	for _, e := range answer.Errors {
		switch e.Extensions.Code {
		case "GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED":
			return e.Extensions.Code + ": " + e.Message
		}
	}
	return ""
}
