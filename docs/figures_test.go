package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// figure matches a figure in microseconds or percent as the docs write them: "35 µs",
// "9.2 µs", "1,231 µs", "57–59 µs", "88 %", "34–43 %", with or without the space.
var figure = regexp.MustCompile(`(\d[\d,]*(?:\.\d+)?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?)?)[ \x{00a0}\x{202f}]?(µs|%)`)

// notMeasured lists the figures in microseconds or percent that the lessons and ADRs state
// although docs/benchmarks.md does not, each with why it is no measurement. An entry that
// no longer matches anything fails the test too, so the list stays short and true.
var notMeasured = []struct{ file, figure, why string }{
	{"docs/lessons/client-contract.md", "20 %", "the retry budget's ratio, a setting"},
	{"docs/lessons/hot-keys.md", "2 %", "the overshoot bound of a lease batch, computed from the settings"},
	{"docs/lessons/failure-modes.md", "80 %", "the near-limit ratio, a setting (ratelimit.NearLimitRatio)"},
	{"docs/lessons/failure-modes.md", "20 %", "the 429-ratio alert's threshold, a setting (deploy/prometheus/alerts.yml)"},
}

// TestMeasuredFigures holds every figure in microseconds or percent in docs/lessons and
// docs/adr to docs/benchmarks.md: the figure must be written there too (in prose, or as a
// cell of a column headed in µs), or be listed in notMeasured. A lesson that quotes a
// measurement cannot then keep an old run's number after the benchmarks are measured again.
// The check compares figures, not meanings: a stale number that happens to equal another
// measurement on the page passes, so quote the benchmarks' own figure.
func TestMeasuredFigures(t *testing.T) {
	root := repoRoot(t)
	bench, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	measured := measuredFigures(string(bench))
	if len(measured) < 50 { // the page holds hundreds: finding few means the scan is broken
		t.Fatalf("found %d figures in docs/benchmarks.md, want at least 50", len(measured))
	}

	var files []string
	for _, dir := range []string{"lessons", "adr"} {
		matches, err := filepath.Glob(filepath.Join(root, "docs", dir, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	used := make([]bool, len(notMeasured))
	for _, f := range files {
		rel := filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator)))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, fig := range figuresIn(line) {
				if measured[fig] {
					continue
				}
				if j := allowed(rel, fig); j >= 0 {
					used[j] = true
					continue
				}
				t.Errorf("%s:%d: %q is not a figure docs/benchmarks.md states; quote the benchmarks, or list it in notMeasured with the reason it is no measurement", rel, i+1, fig)
			}
		}
	}
	for i, ok := range used {
		if !ok {
			t.Errorf("notMeasured lists %q in %s, which no longer states it: remove the entry", notMeasured[i].figure, notMeasured[i].file)
		}
	}
}

// TestFiguresIn holds the figure scanner to the forms the docs write.
func TestFiguresIn(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string
	}{
		{"microseconds", "on Redis, 35 µs serial, of which 9.2 µs", []string{"35 µs", "9.2 µs"}},
		{"no space", "| 1,231 | 55µs (Redis 72µs) |", []string{"55 µs", "72 µs"}},
		{"ranges", "57–59 µs of CPU and 34–43 % of nginx", []string{"57–59 µs", "34–43 %"}},
		{"percent", "at 88 % of redis_rate, 96% parallel", []string{"88 %", "96 %"}},
		{"other units", "5 ms, 1.9×, 20 000 requests", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := figuresIn(tt.line)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("figuresIn(%q) = %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

// figuresIn returns the figures of line, written one way: number, a space, unit.
func figuresIn(line string) []string {
	var out []string
	for _, m := range figure.FindAllStringSubmatch(line, -1) {
		out = append(out, strings.ReplaceAll(m[1], " ", "")+" "+m[2])
	}
	return out
}

// measuredFigures returns every figure docs/benchmarks.md states: those written with their
// unit, and the numbers in the cells of table columns whose heading is in µs ("p50 µs").
func measuredFigures(page string) map[string]bool {
	set := map[string]bool{}
	var unitColumns []bool // of the table being read: which columns are in µs
	for _, line := range strings.Split(page, "\n") {
		for _, f := range figuresIn(line) {
			set[f] = true
		}
		if !strings.HasPrefix(line, "|") {
			unitColumns = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		switch {
		case unitColumns == nil: // a table's heading row
			unitColumns = make([]bool, len(cells))
			for i, c := range cells {
				unitColumns[i] = strings.HasSuffix(strings.TrimSpace(c), "µs")
			}
		default:
			for i, c := range cells {
				c = strings.TrimSpace(c)
				if i < len(unitColumns) && unitColumns[i] && figure.MatchString(c+" µs") {
					set[c+" µs"] = true
				}
			}
		}
	}
	return set
}

// allowed returns the index of fig's notMeasured entry for file, or -1.
func allowed(file, fig string) int {
	for i, e := range notMeasured {
		if e.file == file && e.figure == fig {
			return i
		}
	}
	return -1
}
