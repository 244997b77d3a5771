package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/ratelimit/lab"
)

// runLab is `boxoffice lab`: it replays a trace file through the rate-limiting algorithms and
// prints, for each, how many requests it allowed and denied; with --show requests, a row per
// request with each algorithm's decision and remaining budget; with --json, all of it as JSON.
func runLab(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	setUsage(fs, "usage: boxoffice lab --trace FILE --limit N --window DUR [--burst B] [--max-delay DUR] [--parent P [--ceiling C] [--reserve R]] [--sync DUR [--replicas N]] [--algorithms a,b,…] [--show totals|requests] [--json]\n\n"+
		"FILE has one request per line, seconds[,key[,cost]]; '#' starts a comment.\n"+
		"With --parent, every key is a level under one parent of P per window: --limit is its share,\n"+
		"--ceiling the most it may reach by borrowing (default: the limit), --reserve what borrowers\n"+
		"leave the parent for shares (default: a tenth of P).\n"+
		"With --sync, fixed_window and sliding_counter are replayed again in approximate mode: on N\n"+
		"replicas, dealt the requests in turn, that sync their counts every DUR; a window may then\n"+
		"admit more than the limit, and the over column says by how much.\n"+
		"Sample traces are in playground/web/traces.\n")
	tracePath := fs.String("trace", "", "the trace `file`")
	limit := fs.Int("limit", 0, "requests (cost units) per window")
	window := fs.Duration("window", 0, "the window, e.g. 1s or 1m")
	burst := fs.Int("burst", 0, "token_bucket and gcra capacity (default: limit)")
	maxDelay := fs.Duration("max-delay", 0, "add the line "+lab.QueueLabel+": a gcra whose queue of burst requests delays each by at most this")
	parent := fs.Int("parent", 0, "put every key under one parent of this many per window (token_bucket and gcra)")
	ceiling := fs.Int("ceiling", 0, "with --parent: the most a key may reach per window by borrowing (default: limit)")
	reserve := fs.Int("reserve", 0, "with --parent: what borrowers leave the parent (default: a tenth of it)")
	sync := fs.Duration("sync", 0, "add a line per window algorithm in approximate mode, its replicas syncing every `interval` (10ms to less than the window)")
	replicas := fs.Int("replicas", lab.DefaultReplicas, "with --sync: the replicas the requests are dealt to in turn")
	algorithms := fs.String("algorithms", "", "comma-separated `list` to compare (default: all of "+names(ratelimit.Algorithms)+")")
	show := fs.String("show", "totals", "the table to print: totals (a row per algorithm) or requests (a row per request); --json prints both")
	asJSON := fs.Bool("json", false, "print JSON with every request's decision and remaining budget")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if *tracePath == "" || *limit < 1 || *window <= 0 {
		fs.SetOutput(stderr)
		fs.Usage()
		return errors.New("lab: --trace, --limit and --window are required")
	}
	if *show != "totals" && *show != "requests" {
		return fmt.Errorf("lab: --show %q: want totals or requests", *show)
	}
	if *maxDelay < 0 {
		return fmt.Errorf("lab: --max-delay %v: want 0 (no queue) or more", *maxDelay)
	}
	if (*ceiling != 0 || *reserve != 0) && *parent == 0 {
		return errors.New("lab: --ceiling and --reserve need --parent")
	}
	cfg := lab.Config{Limit: *limit, Window: *window, Burst: *burst, MaxDelay: *maxDelay, Parent: *parent, Ceiling: *ceiling, Reserve: *reserve}
	if *sync != 0 {
		if err := ratelimit.CheckSync(*sync, *window); err != nil {
			return fmt.Errorf("lab: --sync %w", err)
		}
		if *replicas < 1 || *replicas > lab.MaxReplicas {
			return fmt.Errorf("lab: --replicas %d: want 1 to %d", *replicas, lab.MaxReplicas)
		}
		cfg.Sync, cfg.Replicas = *sync, *replicas
	} else if flagSet(fs, "replicas") {
		return errors.New("lab: --replicas needs --sync")
	}
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
	fmt.Fprintf(stdout, "%d requests, limit %d per %v", len(trace), *limit, *window)
	if *parent > 0 {
		fmt.Fprintf(stdout, " per key, under a parent of %d", *parent)
	}
	fmt.Fprint(stdout, "\n\n")
	if *show == "requests" {
		err = printLabRequests(stdout, trace, results)
	} else {
		err = printLabTotals(stdout, results)
	}
	if err != nil {
		return err
	}
	return printLabNotes(stdout, results)
}

// printLabTotals writes one row per algorithm.
func printLabTotals(w io.Writer, results []lab.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hier := len(results) > 0 && results[0].Parent != nil
	approx := slices.ContainsFunc(results, approximate)
	fmt.Fprint(tw, "algorithm\tallowed\tdenied")
	switch {
	case hier:
		fmt.Fprint(tw, "\tborrowed")
	case approx:
		fmt.Fprint(tw, "\tover")
	}
	fmt.Fprintln(tw)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d", r.Name(), r.Allowed, r.Denied)
		switch {
		case hier:
			fmt.Fprintf(tw, "\t%d", r.Borrows)
		case approx && approximate(r):
			fmt.Fprintf(tw, "\t%d", r.Over)
		case approx:
			fmt.Fprint(tw, "\t-")
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// printLabRequests writes one row per request: when it came, who sent it, its cost, and for
// each algorithm whether it passed and the budget left after it.
func printLabRequests(w io.Writer, trace []lab.Request, results []lab.Result) error {
	fmt.Fprintln(w, "Each algorithm's column: allow or deny, then the budget remaining after the request.")
	if slices.ContainsFunc(results, func(r lab.Result) bool { return r.Delays != nil }) {
		fmt.Fprintln(w, lab.QueueLabel+": allow (at once), wait and the seconds waited, or deny, then the places left in the queue.")
	}
	if len(results) > 0 && results[0].Parent != nil {
		fmt.Fprintln(w, "borrow: allowed on the parent's unused budget; the key's remaining is then its ceiling's;\n"+
			"after the slash, the parent's remaining.")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "#\ttime (s)\tkey\tcost")
	for _, r := range results {
		fmt.Fprintf(tw, "\t%s", r.Name())
	}
	fmt.Fprintln(tw)
	for i, q := range trace {
		key := q.Key
		if key == "" {
			key = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d", i+1, seconds(q.At), key, q.Cost)
		for _, r := range results {
			verdict := "deny"
			switch {
			case r.Decisions[i] && r.Delays != nil && r.Delays[i] > 0:
				verdict = "wait " + strconv.FormatFloat(r.Delays[i], 'f', 3, 64)
			case r.Borrowed != nil && r.Borrowed[i]:
				verdict = "borrow"
			case r.Decisions[i]:
				verdict = "allow"
			}
			fmt.Fprintf(tw, "\t%s %d", verdict, r.Remaining[i])
			if r.Parent != nil {
				fmt.Fprintf(tw, "/%d", r.Parent[i])
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// seconds writes a trace time with milliseconds, or microseconds when the trace has them.
func seconds(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

// approximate reports a line of an algorithm in approximate mode (lab.Config.Sync).
func approximate(r lab.Result) bool { return r.Replicas > 0 }

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// printLabNotes writes what a line read differently, such as the cost column that
// concurrency ignores, or an approximate line's bound.
func printLabNotes(w io.Writer, results []lab.Result) error {
	for _, r := range results {
		if r.Note != "" {
			if _, err := fmt.Fprintf(w, "\nnote: %s: %s\n", r.Name(), r.Note); err != nil {
				return err
			}
		}
	}
	return nil
}

func names(algs []ratelimit.Algorithm) string {
	s := make([]string, len(algs))
	for i, a := range algs {
		s[i] = string(a)
	}
	return strings.Join(s, ",")
}
