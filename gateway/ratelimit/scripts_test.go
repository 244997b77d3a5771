package ratelimit

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"boxoffice.dev/platform/testkit"
)

var update = flag.Bool("update", false, "rewrite testdata/decide_gcra.lua instead of comparing it")

// setOf is the set of the algorithms as.
func setOf(as ...Algorithm) algorithmSet {
	var s algorithmSet
	for _, a := range as {
		s = s.with(a)
	}
	return s
}

// TestComposeDecide: a composed script defines the algorithms of its set and no others, and
// keeps the frame around them.
func TestComposeDecide(t *testing.T) {
	tests := []struct {
		name string
		set  algorithmSet
	}{
		{"gcra", setOf(GCRA)},
		{"concurrency", setOf(Concurrency)},
		{"a user's three rules", setOf(GCRA, TokenBucket, FixedWindow)},
		{"all", setOf(Algorithms...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := composeDecide(tt.set)
			if err != nil {
				t.Fatalf("composeDecide(%b) = %v", tt.set, err)
			}
			for i, a := range Algorithms {
				def := "algorithms." + string(a) + " = function"
				if got, want := strings.Contains(src, def), tt.set&(1<<i) != 0; got != want {
					t.Errorf("composeDecide(%b) defines %s: %v, want %v", tt.set, a, got, want)
				}
			}
			if strings.Contains(src, algorithmsLine) {
				t.Errorf("composeDecide(%b) still holds the line %q", tt.set, algorithmsLine)
			}
			if !strings.Contains(src, "local function check(i, cost)") || !strings.HasSuffix(src, "return out\n") {
				t.Errorf("composeDecide(%b) lost the frame's passes", tt.set)
			}
		})
	}
}

// TestDecideScriptsLoad compiles the script of every set of algorithms in Redis, which
// answers with the digest the limiter sends by EVALSHA.
func TestDecideScriptsLoad(t *testing.T) {
	client := testkit.StartRedis(t).Client()
	ctx := context.Background()
	for set := algorithmSet(1); set < 1<<len(Algorithms); set++ {
		s, err := decideScript(set)
		if err != nil {
			t.Fatalf("decideScript(%b) = %v", set, err)
		}
		sha, err := client.ScriptLoad(ctx, s.src.(string)).Result()
		if err != nil {
			t.Fatalf("SCRIPT LOAD of set %b = %v", set, err)
		}
		if sha != s.sha {
			t.Errorf("SCRIPT LOAD of set %b = %s, want %s", set, sha, s.sha)
		}
	}
}

// TestDecideScriptGolden keeps testdata/decide_gcra.lua the script Redis runs for a request
// of one GCRA rule, for readers who want to see a whole one.
func TestDecideScriptGolden(t *testing.T) {
	got, err := composeDecide(setOf(GCRA))
	if err != nil {
		t.Fatal(err)
	}
	const file = "testdata/decide_gcra.lua"
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s is stale: run go test ./gateway/ratelimit -run TestDecideScriptGolden -update", file)
	}
}
