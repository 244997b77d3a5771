package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/ratelimit/lab"
)

// runLab is `boxoffice lab`: it replays a trace file through the rate-limiting algorithms and
// prints, for each, how many requests it allowed and denied — as a table, or as JSON with
// every request's decision.
func runLab(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	setUsage(fs, "usage: boxoffice lab --trace FILE --limit N --window DUR [--burst B] [--algorithms a,b,…] [--json]\n\n"+
		"FILE has one request per line, seconds[,key[,cost]]; '#' starts a comment.\n")
	tracePath := fs.String("trace", "", "the trace `file`")
	limit := fs.Int("limit", 0, "requests (cost units) per window")
	window := fs.Duration("window", 0, "the window, e.g. 1s or 1m")
	burst := fs.Int("burst", 0, "token_bucket and gcra capacity (default: limit)")
	algorithms := fs.String("algorithms", "", "comma-separated `list` to compare (default: all of "+names(ratelimit.Algorithms)+")")
	asJSON := fs.Bool("json", false, "print JSON with every request's decision")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if *tracePath == "" || *limit < 1 || *window <= 0 {
		fs.SetOutput(stderr)
		fs.Usage()
		return errors.New("lab: --trace, --limit and --window are required")
	}
	cfg := lab.Config{Limit: *limit, Window: *window, Burst: *burst}
	if *algorithms != "" {
		for name := range strings.SplitSeq(*algorithms, ",") {
			a, err := ratelimit.ParseAlgorithm(strings.TrimSpace(name))
			if err != nil {
				return fmt.Errorf("lab: %w", err)
			}
			cfg.Algorithms = append(cfg.Algorithms, a)
		}
	}
	f, err := os.Open(*tracePath)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	trace, err := lab.ParseTrace(f)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	results, err := lab.Replay(trace, cfg)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Results []lab.Result `json:"results"`
		}{results})
	}
	return printLabTable(stdout, results, len(trace), *limit, *window)
}

// printLabTable writes one row per algorithm.
func printLabTable(w io.Writer, results []lab.Result, requests, limit int, window time.Duration) error {
	fmt.Fprintf(w, "%d requests, limit %d per %v\n\n", requests, limit, window)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "algorithm\tallowed\tdenied")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Algorithm, r.Allowed, r.Denied)
	}
	return tw.Flush()
}

func names(algs []ratelimit.Algorithm) string {
	s := make([]string, len(algs))
	for i, a := range algs {
		s[i] = string(a)
	}
	return strings.Join(s, ",")
}
