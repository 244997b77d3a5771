package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"boxoffice.dev/playground/scenario"
)

// TestScenarioGraphQLScriptsMeetTheHoldLimit runs the flash sale with its scripts holding
// seats through the mobile and web BFFs' placeHold mutation instead of POST /holds. The
// gateway reads each operation and spends the account's holds-per-account budget for it, so
// the scripts must meet the same 429 after the same five attempts as the REST scripts of
// profile on-sale (TestScenarioRunMeetsEveryExpectation).
func TestScenarioGraphQLScriptsMeetTheHoldLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole system and runs a flash sale for about half a minute")
	}
	ep := startUp(t)
	endpoints := filepath.Join(t.TempDir(), "endpoints.json")
	if err := writeJSON(endpoints, ep); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"boxoffice", "scenario", "run", "flash-sale", "--profile", "graphql-bots",
		"--target", endpoints, "--json"}, func(string) string { return "" }, &out, &errs)
	var res scenario.Result
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		t.Fatalf("scenario run = %v; its --json output does not parse: %v\n%s", err, jerr, errs.String())
	}
	for _, o := range res.Expectations {
		if !o.Passed {
			t.Errorf("%s: want %s; got %s", o.Name, o.Want, o.Got)
		}
	}
	if err != nil {
		t.Fatalf("scenario run flash-sale --profile graphql-bots = %v", err)
	}
	for _, e := range res.Events {
		if e.Kind == "error" {
			t.Errorf("run event at %v: %s", e.At, e.What)
		}
	}

	c := res.Totals.Counters
	t.Logf("script hold attempts: rest %v, mobile %v, web %v; 429 holds-per-account %v; most one script got past %v",
		c["script_holds:rest"], c["script_holds:graphql-mobile"], c["script_holds:graphql-web"],
		c["429:holds-per-account"], c["most_script_holds_passed"])
	if c["script_holds:rest"] != 0 || c["script_holds:graphql-mobile"] == 0 || c["script_holds:graphql-web"] == 0 {
		t.Errorf("script hold attempts: rest %v, mobile %v, web %v; want none through REST and some through each BFF",
			c["script_holds:rest"], c["script_holds:graphql-mobile"], c["script_holds:graphql-web"])
	}
	if got := c["429:holds-per-account"]; got == 0 {
		t.Errorf("429 holds-per-account = 0: GraphQL scripts were never held to the per-account limit")
	}
	// Each script sends 8 attempts in a second or two; holds-per-account lets 5 through.
	if got, ok := c["most_script_holds_passed"]; !ok || got < 1 || got > 5 {
		t.Errorf("most hold attempts one script got past the gateway = %v (tallied: %t), want 1 to 5", got, ok)
	}
}
