package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// printTable writes one row per run, as aligned text or Markdown, then how the gateway with
// policies and the measuring sticks (Caddy, fasthttp) compare with nginx at full load.
func printTable(w io.Writer, results []result, markdown bool) {
	direct := map[string]result{}
	for _, r := range results {
		if r.target == targetsByName["direct"].label {
			direct[r.load] = r
		}
	}
	head := []string{"target", "load", "ok / sent", "throughput", "p50", "p99", "p99.9", "p99 over direct", "proxy CPU / request"}
	rows := [][]string{}
	for _, r := range results {
		added := "—"
		if d, ok := addedP99(r, direct); ok && r.alongside != nil {
			// Against the direct calls of the same seconds, whose p99 is shown beside.
			added = signedMs(d) + " (vs " + ms(r.alongside.quantile(0.99)) + ")"
		} else if ok {
			added = signedMs(d)
		}
		rows = append(rows, []string{
			r.target, r.load, fmt.Sprintf("%d / %d", r.ok, r.sent), fmt.Sprintf("%.0f/s", r.throughput()),
			ms(r.quantile(0.5)), ms(r.quantile(0.99)), ms(r.quantile(0.999)), added, cpuPerRequest(r),
		})
	}
	writeTable(w, head, rows, markdown)
	for _, r := range results {
		if a := r.alongside; a != nil && a.ok < a.sent {
			fmt.Fprintf(w, "direct calls alongside %s at %s: %d failed\n", r.target, r.load, a.sent-a.ok)
		}
		if r.ok < r.sent {
			printFailures(w, fmt.Sprintf("%s at %s: %d failed", r.target, r.load, r.sent-r.ok), r)
		}
	}
	for _, r := range results {
		var all float64
		for _, n := range r.paths {
			all += n
		}
		if all > 0 && r.paths["store"] < all {
			fmt.Fprintf(w, "%s at %s: %.0f%% of rule decisions by the local fallback (Redis past its timeout, or its breaker open), %.0f%% by Redis\n",
				r.target, r.load, 100*r.paths["fallback"]/all, 100*r.paths["store"]/all)
		}
	}
	maxOf := func(name string) (result, bool) {
		for _, r := range results {
			if r.target == targetsByName[name].label && strings.HasPrefix(r.load, "max") {
				return r, true
			}
		}
		return result{}, false
	}
	if g, ok := maxOf("gateway-jwt"); ok {
		if n, ok := maxOf("nginx"); ok && n.throughput() > 0 {
			fmt.Fprintf(w, "max throughput, gateway with JWT + 2 Redis rules: %.0f%% of nginx's plain proxying\n", 100*g.throughput()/n.throughput())
			if g.cpu > 0 && n.cpu > 0 && g.sent > 0 && n.sent > 0 {
				// CPU per request does not depend on what else the machine was doing: the
				// throughput each would reach on CPUs of its own.
				gc, nc := g.cpu/time.Duration(g.sent), n.cpu/time.Duration(n.sent)
				fmt.Fprintf(w, "CPU per request at max, gateway with JWT + 2 Redis rules (Redis included): %s, nginx: %s; on equal CPUs the gateway serves %.0f%% of nginx's rate\n",
					us(gc), us(nc), 100*float64(nc)/float64(gc))
			}
		}
	}
	printGraphQLCost(w, results, direct)
	// The measuring sticks: what a Go proxy on net/http reaches with no policy at all, and
	// what the gateway's own policy code reaches on another HTTP stack.
	for _, m := range []struct{ name, what string }{
		{"caddy", "Caddy (a Go proxy on net/http, no policies)"},
		{"fasthttp-jwt", "fasthttp with JWT + 2 Redis rules (the gateway's policy code, not net/http)"},
	} {
		if c, ok := maxOf(m.name); ok {
			if n, ok := maxOf("nginx"); ok && n.throughput() > 0 {
				fmt.Fprintf(w, "max throughput, %s: %.0f%% of nginx's plain proxying\n", m.what, 100*c.throughput()/n.throughput())
			}
		}
	}
}

// addedP99 is how much r's p99 exceeds the direct calls': those sent alongside it, else the
// direct target's run at the same load; false when there are none, or r is that run.
func addedP99(r result, direct map[string]result) (time.Duration, bool) {
	if r.alongside != nil {
		return r.quantile(0.99) - r.alongside.quantile(0.99), true
	}
	if d, ok := direct[r.load]; ok && r.target != d.target {
		return r.quantile(0.99) - d.quantile(0.99), true
	}
	return 0, false
}

// printGraphQLCost writes, for each load at which both the gateway-graphql and the
// gateway-jwt targets ran, what the GraphQL row spent beyond the JWT row: the same policy
// work, so the difference is reading the GraphQL operation. CPU per request is the steady
// figure; the added p99s come from different seconds and vary more.
func printGraphQLCost(w io.Writer, results []result, direct map[string]result) {
	jwt := map[string]result{}
	for _, r := range results {
		if r.target == targetsByName["gateway-jwt"].label {
			jwt[r.load] = r
		}
	}
	for _, g := range results {
		j, ok := jwt[g.load]
		if g.target != targetsByName["gateway-graphql"].label || !ok || g.sent == 0 || j.sent == 0 || g.cpu <= 0 || j.cpu <= 0 {
			continue
		}
		extra := signedUs(g.cpu/time.Duration(g.sent) - j.cpu/time.Duration(j.sent))
		line := fmt.Sprintf("GraphQL query over JWT + 2 Redis rules at %s: %s CPU per request", g.load, extra)
		ga, gok := addedP99(g, direct)
		ja, jok := addedP99(j, direct)
		if gok && jok {
			line += ", " + signedMs(ga-ja) + " added p99"
		}
		fmt.Fprintln(w, line)
	}
}

// printFloodTable writes one row per run of the flood target, as aligned text or Markdown,
// then the answers of the flood and of the others by status; nothing without runs.
func printFloodTable(w io.Writer, floods []floodResult, markdown bool) {
	if len(floods) == 0 {
		return
	}
	head := []string{"target", "flood, 1 address", "flood answered 429", "others", "others ok / sent", "others p99", "others 503", "decisions by path"}
	rows := make([][]string, 0, len(floods))
	for _, f := range floods {
		served, sent := f.othersServed(), f.othersSent()
		share := 0.0
		if sent > 0 {
			share = 100 * float64(served) / float64(sent)
		}
		rows = append(rows, []string{
			f.target, fmt.Sprintf("%.0f/s, %s", f.floodRate(), f.flood.load),
			fmt.Sprintf("%.1f%%", 100*f.refusedShare()), f.others, fmt.Sprintf("%d / %d (%.1f%%)", served, sent, share),
			ms(mergeResults([]result{f.logins, f.reads}).quantile(0.99)), fmt.Sprint(f.othersRefused()), pathCounts(f.paths),
		})
	}
	writeTable(w, head, rows, markdown)
	for _, f := range floods {
		// A login's 401 (every other one has the wrong password) and the flood's 429s are
		// right answers, listed with the rest so that nothing is hidden.
		for _, part := range []struct {
			what string
			r    result
		}{{"flood", f.flood}, {"others' logins", f.logins}, {"others' reads", f.reads}} {
			if part.r.ok < part.r.sent {
				printFailures(w, fmt.Sprintf("%s, %s: %d of %d not 200", f.target, part.what, part.r.sent-part.r.ok, part.r.sent), part.r)
			}
		}
		if f.flood.sent > 0 && f.flood.failures["429"] == 0 {
			fmt.Fprintf(w, "%s: the flood got no 429, so it never outran its limit and the row measured nothing\n", f.target)
		}
	}
}

// writeTable writes head and rows as a Markdown table or as text aligned in columns, then an
// empty line.
func writeTable(w io.Writer, head []string, rows [][]string, markdown bool) {
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, row := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
}

// printFailures writes the line what, then r's failures by kind in brackets, then the first
// failure of each kind, to say what went wrong.
func printFailures(w io.Writer, what string, r result) {
	kinds := slices.Sorted(maps.Keys(r.failures))
	counts := make([]string, len(kinds))
	for i, k := range kinds {
		counts[i] = fmt.Sprintf("%s ×%d", k, r.failures[k])
	}
	fmt.Fprintf(w, "%s (%s)\n", what, strings.Join(counts, ", "))
	for _, k := range kinds {
		fmt.Fprintf(w, "  first %s: %s\n", k, r.firstErr[k])
	}
}

// cpuPerRequest is the proxy's CPU time per request sent, with Redis's part, "—" for the
// direct call.
func cpuPerRequest(r result) string {
	if r.cpu <= 0 || r.sent == 0 {
		return "—"
	}
	s := us(r.cpu / time.Duration(r.sent))
	if r.cpuRedis > 0 {
		s += " (Redis " + us(r.cpuRedis/time.Duration(r.sent)) + ")"
	}
	return s
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }

func signedUs(d time.Duration) string {
	if d < 0 {
		return "-" + us(-d)
	}
	return "+" + us(d)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }

func signedMs(d time.Duration) string {
	if d < 0 {
		return "-" + ms(-d)
	}
	return "+" + ms(d)
}
