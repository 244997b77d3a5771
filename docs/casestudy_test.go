package docs

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/testkit"
)

var update = flag.Bool("update", false, "rewrite the generated tables of docs/lessons/case-study.md with what the tests measure")

// The case study's assumptions: the load and the clients the estimates are made for.
const (
	peakDecisions  = 50_000    // requests a second at peak, one script call each
	activeClients  = 1_000_000 // clients with live limiter state
	keysPerClient  = 2         // one per rule: per user and per IP
	nodeBusyTarget = 0.5       // plan a Redis node at half its one thread, for bursts and queueing
	userKey        = "user:1000042"
)

// caseStudyPage is the page whose generated tables the tests below keep true.
const caseStudyPage = "docs/lessons/case-study.md"

// memoryTolerance is how far a measured size may stray from the page's before the page is
// wrong: other Redis versions and allocators, and the random levels of a sorted set's skip
// list, move sizes by a few bytes.
const memoryTolerance = 0.1

// TestCaseStudyMemory measures what one client's state costs Redis under each algorithm:
// it runs the real limiter's script on a real redis-server and reads MEMORY USAGE of the key
// the script created, then checks the page's table against it, within memoryTolerance.
// go test ./docs -run CaseStudy -update rewrites the table.
func TestCaseStudyMemory(t *testing.T) {
	rd := testkit.StartRedis(t)
	client := rd.Client()
	lim := ratelimit.NewRedis(client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	perMinute := func(a ratelimit.Algorithm, burst int) ratelimit.Rule {
		return ratelimit.Rule{ID: "per-user", Algorithm: a, Limit: 600, Window: time.Minute, Burst: burst}
	}
	cases := []struct {
		rule  ratelimit.Rule
		calls int    // decisions made before measuring: the state a busy client keeps
		holds string // what the key holds, for the reader
	}{
		{perMinute(ratelimit.FixedWindow, 0), 10, "a string: window start, count"},
		{perMinute(ratelimit.SlidingCounter, 0), 10, "a string: window start, two counts"},
		{perMinute(ratelimit.TokenBucket, 100), 10, "a string: tokens, last refill"},
		{perMinute(ratelimit.GCRA, 100), 10, "a string: one time (the TAT)"},
		{perMinute(ratelimit.SlidingLog, 0), 600, "a sorted set: one entry per request, 600 (a full minute)"},
		{ratelimit.Rule{ID: "per-user", Algorithm: ratelimit.Concurrency, Limit: 10, Window: 30 * time.Second}, 10,
			"a sorted set: one lease per request in flight, 10"},
	}
	rows := [][]string{{"algorithm", "the key holds", "bytes (MEMORY USAGE)", "bytes per entry", fmt.Sprintf("%s clients × %d keys", thousands(activeClients), keysPerClient)}}
	for _, c := range cases {
		if err := client.FlushAll(ctx).Err(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
		for i := range c.calls {
			res, err := lim.Allow(ctx, []ratelimit.Request{{Rule: c.rule, Key: userKey}})
			if err != nil || !res.Allowed {
				t.Fatalf("%s: decision %d = %+v, %v; want allowed", c.rule.Algorithm, i+1, res.Decision, err)
			}
		}
		keys, err := client.Keys(ctx, "*").Result()
		want := "rl:{" + userKey + "}:" + c.rule.ID // storageKey's shape: rl:{tag}:rule
		if err != nil || len(keys) != 1 || keys[0] != want {
			t.Fatalf("%s: keys = %q, %v; want only %q", c.rule.Algorithm, keys, err, want)
		}
		bytes, err := client.MemoryUsage(ctx, want, 0).Result() // SAMPLES 0: every entry
		if err != nil {
			t.Fatalf("MEMORY USAGE %s: %v", want, err)
		}
		perEntry := "—"
		if c.rule.Algorithm == ratelimit.SlidingLog || c.rule.Algorithm == ratelimit.Concurrency {
			perEntry = strconv.FormatInt(int64(math.Round(float64(bytes)/float64(c.calls))), 10)
		}
		rows = append(rows, []string{"`" + string(c.rule.Algorithm) + "`", c.holds, thousands(bytes), perEntry,
			size(float64(bytes) * activeClients * keysPerClient)})
	}
	checkGenerated(t, "memory", table(rows), memoryTolerance)
}

// TestCaseStudyEstimates computes the case study's Redis nodes and added latency from the
// figures docs/benchmarks.md states, and checks the page's tables against them exactly: a
// new measurement changes the benchmarks, and this test then says which numbers of the case
// study move with it. go test ./docs -run CaseStudy -update rewrites the tables.
func TestCaseStudyEstimates(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	tables := parseTables(page)

	// Script time per decision is in the prose; the whole Redis CPU in the batching table.
	prose := strings.Join(strings.Fields(page), " ")
	m := regexp.MustCompile(`Server time per decision[^:]*: this limiter ([\d.]+) µs for 1 rule and ([\d.]+) µs for 3`).FindStringSubmatch(prose)
	if m == nil {
		t.Fatal(`docs/benchmarks.md no longer says "Server time per decision …: this limiter N µs for 1 rule and N µs for 3"`)
	}
	costs := []struct{ what, micros, from string }{
		{"script time, 1 rule", m[1], "`INFO commandstats`, serial"},
		{"script time, 3 rules", m[2], "`INFO commandstats`, serial"},
		{"whole CPU, 2 rules, unbatched", cell(t, tables, "variant", "unbatched", "Redis CPU µs"), "`/proc`, 64 deciding at once"},
		{"whole CPU, 2 rules, batched", cell(t, tables, "variant", "2 (GOMAXPROCS here)", "Redis CPU µs"), "`/proc`, 64 deciding at once"},
	}
	nodes := [][]string{{"what one decision costs Redis", "per decision", "measured by", "one node at half busy", fmt.Sprintf("busy at %s/s", thousands(peakDecisions)), "primaries"}}
	for _, c := range costs {
		micros, err := strconv.ParseFloat(c.micros, 64)
		if err != nil || micros <= 0 {
			t.Fatalf("%s: %q is not a time in µs", c.what, c.micros)
		}
		busy := peakDecisions * micros / 1e6 // seconds of Redis's one thread per second
		nodes = append(nodes, []string{c.what, c.micros + " µs", c.from,
			thousands(int64(nodeBusyTarget*1e6/micros)) + "/s", strconv.FormatFloat(busy, 'f', 2, 64),
			strconv.Itoa(int(math.Ceil(busy / nodeBusyTarget)))})
	}
	checkGenerated(t, "nodes", table(nodes), 0)

	latency := [][]string{{"what is measured", "p50", "p99"}}
	for _, r := range []struct{ what, row string }{
		{"one Redis decision, 1 rule, one at a time", "Redis, 1 rule"},
		{"one Redis decision, 3 rules in one script call", "Redis, 3 rules (one round trip)"},
	} {
		row := map[string]string{"decision": r.row, "in flight": "1"}
		latency = append(latency, []string{r.what, cellWhere(t, tables, row, "p50 µs") + " µs", cellWhere(t, tables, row, "p99 µs") + " µs"})
	}
	for _, r := range []struct{ what, target string }{
		{"p99 the gateway adds at 1000/s, no policies", "gateway, no policies"},
		{"p99 the gateway adds at 1000/s, a JWT and 2 Redis rules", "gateway, JWT + 2 Redis rules"},
		{"p99 nginx adds at 1000/s, as a plain proxy", "nginx, plain reverse proxy"},
	} {
		over := cellWhere(t, tables, map[string]string{"target": r.target, "load": "1000/s"}, "p99 over direct")
		latency = append(latency, []string{r.what, "—", strings.Replace(strings.Fields(over)[0], "ms", " ms", 1)})
	}
	checkGenerated(t, "latency", table(latency), 0)
}

// checkGenerated compares the page's block name with want, numbers within tol (relative),
// and rewrites the block with -update.
func checkGenerated(t *testing.T, name, want string, tol float64) {
	t.Helper()
	path := filepath.Join(repoRoot(t), filepath.FromSlash(caseStudyPage))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- case-study:"+name+" ", "<!-- /case-study:"+name+" -->"
	page := string(data)
	i := strings.Index(page, begin)
	if i < 0 {
		t.Fatalf("%s has no %q…%q block", caseStudyPage, begin, end)
	}
	i += strings.Index(page[i:], "\n") + 1
	j := strings.Index(page[i:], end)
	if j < 0 {
		t.Fatalf("%s: block %s has no end %q", caseStudyPage, name, end)
	}
	got := page[i : i+j]
	if *update {
		if err := os.WriteFile(path, []byte(page[:i]+want+page[i+j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !sameWithin(got, want, tol) {
		t.Errorf("%s: the %s table differs from what was measured (run go test ./docs -run CaseStudy -update); want:\n%s", caseStudyPage, name, want)
	}
}

var number = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)

// sameWithin reports whether a and b are the same text with numbers that differ by at most
// tol of b's.
func sameWithin(a, b string, tol float64) bool {
	if number.ReplaceAllString(a, "#") != number.ReplaceAllString(b, "#") {
		return false
	}
	as, bs := number.FindAllString(a, -1), number.FindAllString(b, -1)
	for k := range as {
		x, _ := strconv.ParseFloat(strings.ReplaceAll(as[k], ",", ""), 64)
		y, _ := strconv.ParseFloat(strings.ReplaceAll(bs[k], ",", ""), 64)
		if math.Abs(x-y) > tol*math.Abs(y) {
			return false
		}
	}
	return true
}

// mdTable is a markdown table: its heading cells and rows.
type mdTable struct {
	head []string
	rows [][]string
}

// parseTables reads every table of a markdown page.
func parseTables(page string) []mdTable {
	var out []mdTable
	var cur *mdTable
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		switch {
		case cur == nil:
			out = append(out, mdTable{head: cells})
			cur = &out[len(out)-1]
		case strings.Trim(strings.Join(cells, ""), "-:") == "": // the delimiter row
		default:
			cur.rows = append(cur.rows, cells)
		}
	}
	return out
}

// cell is cellWhere for a row picked by one column.
func cell(t *testing.T, tables []mdTable, col, value, want string) string {
	t.Helper()
	return cellWhere(t, tables, map[string]string{col: value}, want)
}

// cellWhere returns column want of the one row, in any table, whose columns hold the values
// of where; it fails the test when no row or several match.
func cellWhere(t *testing.T, tables []mdTable, where map[string]string, want string) string {
	t.Helper()
	var found []string
	for _, tb := range tables {
		index := map[string]int{}
		for k, h := range tb.head {
			index[h] = k
		}
		w, ok := index[want]
		if !ok {
			continue
		}
	rows:
		for _, r := range tb.rows {
			for col, v := range where {
				k, ok := index[col]
				if !ok || k >= len(r) || r[k] != v {
					continue rows
				}
			}
			if w < len(r) {
				found = append(found, r[w])
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/benchmarks.md: %d rows with %v and a column %q, want 1", len(found), where, want)
	}
	return found[0]
}

// table writes rows as a markdown table, the first row as its heading.
func table(rows [][]string) string {
	var b strings.Builder
	for k, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if k == 0 {
			b.WriteString("|" + strings.Repeat("---|", len(r)) + "\n")
		}
	}
	return b.String()
}

// thousands writes n with a comma between thousands, as the docs do.
func thousands[N int | int64](n N) string {
	s := strconv.FormatInt(int64(n), 10)
	for k := len(s) - 3; k > 0; k -= 3 {
		s = s[:k] + "," + s[k:]
	}
	return s
}

// size writes a count of bytes in MB or GB (10^6, 10^9), to two significant figures at least.
func size(bytes float64) string {
	if bytes >= 1e9 {
		return strconv.FormatFloat(bytes/1e9, 'f', 1, 64) + " GB"
	}
	return strconv.FormatFloat(bytes/1e6, 'f', 0, 64) + " MB"
}

// TestSameWithin holds the page comparison to its tolerance.
func TestSameWithin(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		tol  float64
		want bool
	}{
		{"equal", "| 72 | 144 MB |", "| 72 | 144 MB |", 0, true},
		{"within the tolerance", "| 75 | 150 MB |", "| 72 | 144 MB |", 0.1, true},
		{"past the tolerance", "| 90 | 144 MB |", "| 72 | 144 MB |", 0.1, false},
		{"another unit", "| 72 | 144 GB |", "| 72 | 144 MB |", 0.1, false},
		{"exact, off by a tenth", "| 9.2 µs | 1 |", "| 9.3 µs | 1 |", 0, false},
		{"thousands separators", "| 1,085 |", "| 1,080 |", 0.1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameWithin(tt.a, tt.b, tt.tol); got != tt.want {
				t.Errorf("sameWithin(%q, %q, %v) = %v, want %v", tt.a, tt.b, tt.tol, got, tt.want)
			}
		})
	}
}
