package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestMermaidDiagramsParse parses every ```mermaid block of the docs and README.md with
// Mermaid's own parser (tools/mermaid-check), the one GitHub renders them with.
func TestMermaidDiagramsParse(t *testing.T) {
	root := repoRoot(t)
	var diagrams []diagram
	for _, f := range markdownFiles(t, root) {
		diagrams = append(diagrams, mermaidBlocks(t, root, f)...)
	}
	// architecture.md alone draws the system, the pipeline, the flash sale and the saga.
	if len(diagrams) < 4 {
		t.Fatalf("found %d mermaid diagrams, want at least 4", len(diagrams))
	}
	errs := parseMermaid(t, diagrams)
	for i, d := range diagrams {
		if errs[i] != "" {
			t.Errorf("%s does not parse:\n%s", d.Source, errs[i])
		}
	}
}

// TestMermaidCheckerRejectsBrokenDiagrams proves the check can fail: each fixture in
// testdata/mermaid holds one diagram, valid or broken, of each kind the docs draw.
func TestMermaidCheckerRejectsBrokenDiagrams(t *testing.T) {
	root := repoRoot(t)
	tests := []struct {
		name    string
		file    string
		wantErr string // a part of the parser's message; "" means it parses
	}{
		{"valid flowchart", "flowchart-valid.md", ""},
		{"valid sequence diagram", "sequence-valid.md", ""},
		{"valid state diagram", "state-valid.md", ""},
		{"flowchart with an unclosed node", "flowchart-broken.md", "Parse error on line 3"},
		{"sequence diagram with a message to nobody", "sequence-broken.md", "Parse error on line 3"},
		{"state diagram with a dangling arrow", "state-broken.md", "Parse error on line 3"},
		{"unknown diagram type", "unknown-type.md", "No diagram type detected"},
	}
	var diagrams []diagram
	for _, tt := range tests {
		blocks := mermaidBlocks(t, root, "docs/testdata/mermaid/"+tt.file)
		if len(blocks) != 1 {
			t.Fatalf("%s holds %d mermaid blocks, want 1", tt.file, len(blocks))
		}
		diagrams = append(diagrams, blocks[0])
	}
	errs := parseMermaid(t, diagrams) // one Node process for all cases: it starts in seconds
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errs[i]
			switch {
			case tt.wantErr == "" && got != "":
				t.Errorf("parse(%s) = %q, want no error", tt.file, got)
			case tt.wantErr != "" && !strings.Contains(got, tt.wantErr):
				t.Errorf("parse(%s) = %q, want an error containing %q", tt.file, got, tt.wantErr)
			}
		})
	}
}

// diagram is one mermaid block, named by file and line, as check.mjs reads it.
type diagram struct {
	Source string `json:"source"`
	Text   string `json:"text"`
}

// mermaidBlocks returns the ```mermaid blocks of file (a slash path from root).
func mermaidBlocks(t *testing.T, root, file string) []diagram {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	var out []diagram
	for _, f := range parseDocument(string(data)).fences {
		if f.info == "mermaid" {
			out = append(out, diagram{Source: file + ":" + strconv.Itoa(f.line), Text: f.text})
		}
	}
	return out
}

// mermaidTool is where check.mjs and its npm packages live, relative to docs/.
const mermaidTool = "tools/mermaid-check"

// parseMermaid runs check.mjs on diagrams and returns each one's parse error, "" when it
// parses. Without node or the installed packages it skips the test, or fails it in CI.
func parseMermaid(t *testing.T, diagrams []diagram) []string {
	t.Helper()
	node := testkit.LookPath(t, "node")
	for _, pkg := range []string{"mermaid", "jsdom"} {
		if _, err := os.Stat(filepath.Join(mermaidTool, "node_modules", pkg, "package.json")); err != nil {
			testkit.Missing(t, "the npm package "+pkg+" (cd docs/"+mermaidTool+" && npm ci)")
		}
	}
	in, err := json.Marshal(diagrams)
	if err != nil {
		t.Fatalf("encode diagrams: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs")
	cmd.Dir = mermaidTool
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node check.mjs: %v\n%s", err, stderr.String())
	}
	var results []struct {
		Source string `json:"source"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		t.Fatalf("node check.mjs answered %q: %v", stdout.String(), err)
	}
	if len(results) != len(diagrams) {
		t.Fatalf("node check.mjs answered for %d diagrams, want %d", len(results), len(diagrams))
	}
	errs := make([]string, len(results))
	for i, r := range results {
		if r.Source != diagrams[i].Source {
			t.Fatalf("answer %d is for %s, want %s", i, r.Source, diagrams[i].Source)
		}
		errs[i] = r.Error
	}
	return errs
}
