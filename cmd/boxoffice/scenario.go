package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"boxoffice.dev/playground"
	"boxoffice.dev/playground/report"
	"boxoffice.dev/playground/scenario"
	"boxoffice.dev/scenarios"
)

const scenarioUsage = `usage:
  boxoffice scenario list
  boxoffice scenario run NAME [--profile P] [--duration D] [--target URL|FILE] [--json] [--report FILE.html]

run drives the system through a scenario's phases and checks its expectations; it exits
non-zero when one is missed. Without --target it starts the whole system in this process
first (as 'boxoffice up' does, on free ports and a temporary data dir).
`

// runScenario is `boxoffice scenario`.
func runScenario(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, scenarioUsage)
		return errors.New("scenario: list or run?")
	}
	list, err := scenario.LoadDir(scenarios.FS)
	if err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	switch args[0] {
	case "list":
		fs := flag.NewFlagSet("scenario list", flag.ContinueOnError)
		setUsage(fs, "usage: boxoffice scenario list\n\nlists every scenario with its profiles and how long each runs.\n")
		if err := parseFlags(fs, args[1:], stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("scenario list: takes no arguments, got %q", fs.Arg(0))
		}
		return listScenarios(stdout, list)
	case "run":
		return runOneScenario(ctx, args[1:], list, getenv, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, scenarioUsage)
		return nil
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, scenarioUsage)
		return nil
	}
	fmt.Fprint(stderr, scenarioUsage)
	return fmt.Errorf("scenario: unknown command %q", args[0])
}

func listScenarios(w io.Writer, list []scenario.Scenario) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tprofiles\ttitle")
	for _, s := range list {
		var ps []string
		for _, p := range s.Profiles {
			ps = append(ps, fmt.Sprintf("%s (%v)", p.Name, p.Duration()))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, strings.Join(ps, ", "), s.Title)
	}
	return tw.Flush()
}

func runOneScenario(ctx context.Context, args []string, list []scenario.Scenario, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scenario run", flag.ContinueOnError)
	setUsage(fs, scenarioUsage)
	profile := fs.String("profile", "", "the profile to run (default: the scenario's first)")
	duration := fs.Duration("duration", 0, fmt.Sprintf("scale the profile's phases to last about this long (at most %v)", playground.MaxRunDuration))
	target := fs.String("target", "", "a running system: its endpoints.json, or the gateway's `URL` (then --admin, --admin-token, --nats)")
	admin := fs.String("admin", "", "the gateway admin API's URL, with --target URL")
	adminToken := fs.String("admin-token", getenv("ADMIN_TOKEN"), "the admin API's bearer token (default $ADMIN_TOKEN)")
	natsURL := fs.String("nats", "", "NATS, to reach every replica's control hook, with --target URL")
	asJSON := fs.Bool("json", false, "print the per-second series and totals as JSON instead of a table")
	reportPath := fs.String("report", "", "write a self-contained HTML report of the run to `FILE`")
	journalPath := fs.String("journal", "", "with --target, where the run records what to put back should it be killed, and where a killed run's leftovers are found (default: scenario-journal.json beside the endpoints file, or in $DATA_DIR or .boxoffice for a URL)")
	// The scenario's name comes first; flags follow it. Help may be asked for without one.
	if len(args) > 0 && isHelp(args[0]) {
		return parseFlags(fs, args[:1], stdout, stderr)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, scenarioUsage)
		return errors.New("scenario run: which scenario? (boxoffice scenario list)")
	}
	name := args[0]
	if err := parseFlags(fs, args[1:], stdout, stderr); err != nil {
		return err
	}
	// The playground's bound: a longer run is a typo, and would hold the system for hours.
	if *duration < 0 || *duration > playground.MaxRunDuration {
		return fmt.Errorf("scenario run: --duration %v: want at most %v (0 runs the profile as written)", *duration, playground.MaxRunDuration)
	}
	sc, err := scenario.Find(list, name)
	if err != nil {
		return fmt.Errorf("scenario run: %w", err)
	}
	if _, err := sc.Profile(*profile); err != nil {
		return fmt.Errorf("scenario run: %w", err)
	}

	var t scenario.Target
	switch {
	case *target == "":
		var stop func() error
		t, stop, err = startSystem(ctx, getenv, stderr)
		if err != nil {
			return fmt.Errorf("scenario run: %w", err)
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(stderr, "stopping the system: %v\n", err)
			}
		}()
	case strings.HasPrefix(*target, "http://") || strings.HasPrefix(*target, "https://"):
		t = scenario.Target{Gateway: strings.TrimSuffix(*target, "/"), Admin: strings.TrimSuffix(*admin, "/"), AdminToken: *adminToken, NATS: *natsURL}
	default:
		if t, err = scenario.TargetFromEndpoints(*target); err != nil {
			return fmt.Errorf("scenario run: %w", err)
		}
	}

	var journal *scenario.Journal
	if *target != "" {
		if journal, err = scenarioJournal(ctx, t, *journalPath, *target, getenv, stderr); err != nil {
			return fmt.Errorf("scenario run: %w", err)
		}
	}
	run, err := scenario.Start(ctx, sc, *profile, t, scenario.Options{Duration: *duration, Journal: journal})
	if err != nil {
		return fmt.Errorf("scenario run: %w", err)
	}
	progress(run, stderr)
	res := run.Result()

	if *reportPath != "" {
		if err := writeReport(*reportPath, sc, res); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", *reportPath)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printSummary(stdout, res)
	}
	switch {
	case res.Err != "":
		return fmt.Errorf("scenario run: %s", res.Err)
	case res.Stopped:
		return errors.New("scenario run: stopped before the end; expectations not checked")
	case !res.Passed():
		return errors.New("scenario run: an expectation was missed")
	}
	return nil
}

// progress prints one live line per second until the run ends.
func progress(run *scenario.Run, w io.Writer) {
	samples, cancel := run.Subscribe()
	defer cancel()
	total := run.Profile().Duration()
	for s := range samples {
		fmt.Fprintf(w, "\r%3ds/%v  %-22s sent %4d  2xx %4d  429 %4d  503 %4d  5xx %3d  err %3d  timeout %3d  p99 %6.1fms  backend %d/%d   ",
			s.T+1, total, s.Phase, s.Sent, s.OK, s.TooMany, s.Unavailable, s.ServerErrors, s.ClientErrors+s.Errors, s.Timeouts, s.P99, s.BackendInFlight, s.BackendCapacity)
	}
	<-run.Done()
	fmt.Fprintln(w)
}

// printSummary writes one row per phase, the scenario's counters, then the expectations.
func printSummary(w io.Writer, res scenario.Result) {
	fmt.Fprintf(w, "\n%s / %s\n\n", res.Scenario, res.Profile)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\tsent\trequests\t2xx\t429\t503\t5xx\terrors\ttimeouts\tgoodput/s\tp50 ms\tp95 ms\tp99 ms\t")
	row := func(name string, s scenario.Stats) {
		fmt.Fprintf(tw, "%s\t%g\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, s.Seconds, s.Sent, s.Requests, s.OK,
			s.TooMany, s.Unavailable, s.ServerErrors, s.ClientErrors+s.Errors, s.Timeouts, perSecond(s.Goodput, s.Seconds), s.P50, s.P95, s.P99)
	}
	for _, p := range res.Phases {
		row(p.Phase, p)
	}
	row("(whole run)", res.Totals)
	tw.Flush()
	if len(res.Totals.Counters) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range slices.Sorted(maps.Keys(res.Totals.Counters)) {
			fmt.Fprintf(tw, "%s\t%g\n", k, res.Totals.Counters[k])
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	for _, o := range res.Expectations {
		mark := "PASS"
		if !o.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s  %s\n      want %s\n      got  %s\n", mark, o.Name, o.Want, o.Got)
	}
	if res.Stopped {
		fmt.Fprintln(w, "stopped before the end: expectations not checked")
	}
}

func perSecond(n int, seconds float64) float64 {
	if seconds == 0 {
		return 0
	}
	return float64(n) / seconds
}

func writeReport(path string, sc scenario.Scenario, res scenario.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := report.Write(f, sc, res); err != nil {
		f.Close()
		return fmt.Errorf("report: %w", err)
	}
	return f.Close()
}

// scenarioJournalFile is the put-back journal of runs the command makes against a running
// system: a file of its own, since the playground of that system keeps its journal in the
// same directory and one journal serves one process.
const scenarioJournalFile = "scenario-journal.json"

// scenarioJournal opens the put-back journal of a run against the running system t (at path,
// or by default beside the endpoints file target, or in DATA_DIR for a gateway URL) and puts
// back first what a killed run of this command left there: the run would otherwise measure
// a system still carrying it. A leftover that cannot be put back now is an error, with the
// journal kept for another try.
func scenarioJournal(ctx context.Context, t scenario.Target, path, target string, getenv func(string) string, stderr io.Writer) (*scenario.Journal, error) {
	if path == "" {
		dir := cmp.Or(getenv("DATA_DIR"), ".boxoffice")
		if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
			dir = filepath.Dir(target)
		}
		path = filepath.Join(dir, scenarioJournalFile)
	}
	j, err := scenario.OpenJournal(path)
	switch {
	case errors.Is(err, scenario.ErrCorruptJournal) && j != nil:
		// Set aside, as the playground does: the run goes on, and the person is told.
		fmt.Fprintf(stderr, "warning: a killed run's changes may still be in force, put them back by hand (DELETE /admin/edits on the gateway): %v\n", err)
	case err != nil:
		return nil, fmt.Errorf("put-back journal: %w", err)
	}
	if n := j.Pending(); n > 0 {
		fmt.Fprintf(stderr, "a killed run left %d changes in %s: putting them back first…\n", n, path)
		if err := scenario.PutBack(ctx, t, j, nil); err != nil {
			return nil, fmt.Errorf("put back a killed run's changes (still in %s): %w", path, err)
		}
	}
	return j, nil
}

// startSystem runs `boxoffice up` in this process on a free port offset with a temporary
// data dir, and returns its target once endpoints.json is written, with a function that
// stops it and removes the dir. A port taken between the check and the bind (another
// process on the machine) makes it try another offset, up to three times.
func startSystem(ctx context.Context, getenv func(string) string, stderr io.Writer) (scenario.Target, func() error, error) {
	var err error
	for range 3 {
		var t scenario.Target
		var stop func() error
		t, stop, err = startSystemOnce(ctx, getenv, stderr)
		if err == nil {
			return t, stop, nil
		}
		var taken *portTakenError
		if !errors.As(err, &taken) && !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return scenario.Target{}, nil, err
}

func startSystemOnce(ctx context.Context, getenv func(string) string, stderr io.Writer) (scenario.Target, func() error, error) {
	dir, err := os.MkdirTemp("", "boxoffice-scenario-")
	if err != nil {
		return scenario.Target{}, nil, fmt.Errorf("data dir: %w", err)
	}
	off, err := pickOffset()
	if err != nil {
		os.RemoveAll(dir)
		return scenario.Target{}, nil, err
	}
	upCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	fmt.Fprintf(stderr, "starting the system (port offset %d, data in %s)…\n", off, dir)
	go func() {
		done <- runUp(upCtx, []string{"--data-dir", dir, "--port-offset", strconv.Itoa(off), "--ready-timeout", "30s"}, getenv, io.Discard, io.Discard)
	}()
	stop := func() error {
		cancel()
		err := <-done
		return errors.Join(err, os.RemoveAll(dir))
	}
	path := filepath.Join(dir, "endpoints.json")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			t, err := scenario.TargetFromEndpoints(path)
			if err != nil {
				return scenario.Target{}, nil, errors.Join(err, stop())
			}
			return t, stop, nil
		}
		select {
		case err := <-done:
			cancel()
			os.RemoveAll(dir)
			return scenario.Target{}, nil, fmt.Errorf("the system stopped while starting: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return scenario.Target{}, nil, errors.Join(errors.New("the system was not ready within 60s"), stop())
		}
	}
}
