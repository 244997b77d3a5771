package playground

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/playground/scenario"
)

// keepRuns is how many finished runs keep their results for GET /api/runs/{id}: enough for a
// class to compare the last few knob settings, few enough that memory stays flat (a run's
// series is one sample a second).
const keepRuns = 8

// knobTimeout bounds turning one knob: a few calls to the admin API or one NATS publish.
const knobTimeout = 10 * time.Second

// MaxRunDuration is the longest a run may be asked to last (POST /api/runs "duration", the
// CLI's --duration): longer than any lesson needs, short enough that a run forgotten in a
// tab ends, and that its per-second series stays small.
const MaxRunDuration = 10 * time.Minute

// runs starts scenario runs and keeps them. At most one run is active at a time: runs share
// one system, and two at once would each measure the other's load. Finished runs stay
// readable until keepRuns newer ones replace them. Safe for concurrent use.
//
// A run changes the system it drives (gateway limits, control knobs) and puts it back as it
// ends. The process must not exit in between, or the changes outlive it (the gateway stores
// its admin edits): close stops the active run and waits for it, put-back included. A process
// that dies all the same leaves them in the put-back journal (options.Journal), which the
// next one puts back before any run starts (replay).
type runs struct {
	// ctx is the process's: a run outlives the request that started it and ends with the
	// process.
	ctx       context.Context
	scenarios []scenario.Scenario
	// target finds the running system when a run starts (the system may come up after the
	// playground does).
	target func() (scenario.Target, error)
	// options are the runner's settings every run gets (a test's clock, say); Duration is
	// the request's.
	options scenario.Options
	log     *slog.Logger

	mu    sync.Mutex
	next  int
	all   []*runRecord // oldest first
	byID  map[string]*runRecord
	alive *runRecord // starting or running; nil when idle
	// closed: the process is stopping and starts no run. Set under mu, so no run joins
	// running after close began waiting.
	closed  bool
	running sync.WaitGroup // the runs' goroutines, until each has put the system back
	// replayed is closed once the changes a dead process left in the journal are put back
	// (or given up on); no run starts before.
	replayed chan struct{}
}

// newRuns keeps the runs of scenarios against the system target finds. When o.Journal holds
// changes a dead process left (a run it never put back), they are put back in the background
// first (replay), and runs wait for that.
func newRuns(ctx context.Context, scenarios []scenario.Scenario, target func() (scenario.Target, error), o scenario.Options, log *slog.Logger) *runs {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rs := &runs{ctx: ctx, scenarios: scenarios, target: target, options: o, log: log, byID: map[string]*runRecord{}, replayed: make(chan struct{})}
	if o.Journal.Pending() == 0 {
		close(rs.replayed)
		return rs
	}
	rs.running.Add(1)
	go rs.replay(o.Journal)
	return rs
}

// runRecord is one run, from the moment it is asked for. scenario.Start sets the system up
// before it returns a Run (logging fans in can take seconds), so a record exists first, in
// state "starting", and the run is attached when Start returns.
type runRecord struct {
	ID       string
	Scenario scenario.Scenario
	Profile  string

	cancel  context.CancelFunc
	started chan struct{} // closed when Start has returned; run or err is set before

	run *scenario.Run
	err error
}

// The states a run goes through, as the API names them.
const (
	stateStarting = "starting"
	stateRunning  = "running"
	stateDone     = "done"
	stateFailed   = "failed"
)

// state reports where the run is; it does not block.
func (rec *runRecord) state() string {
	select {
	case <-rec.started:
	default:
		return stateStarting
	}
	if rec.err != nil {
		return stateFailed
	}
	select {
	case <-rec.run.Done():
		if rec.run.Result().Err != "" {
			return stateFailed
		}
		return stateDone
	default:
		return stateRunning
	}
}

// active reports whether the run is starting or running: whether it holds the system.
func (rec *runRecord) active() bool {
	s := rec.state()
	return s == stateStarting || s == stateRunning
}

// runInfo is a run as the API shows it: what it runs and where it is. Phases are the
// profile's, scaled to the run's duration, once the run has started.
type runInfo struct {
	ID       string           `json:"id"`
	Scenario string           `json:"scenario"`
	Profile  string           `json:"profile"`
	State    string           `json:"state"`
	Error    string           `json:"error,omitempty"`
	Phases   []scenario.Phase `json:"phases,omitempty"`
	Result   *scenario.Result `json:"result,omitempty"`
}

func (rec *runRecord) info(withResult bool) runInfo {
	in := runInfo{ID: rec.ID, Scenario: rec.Scenario.Name, Profile: rec.Profile, State: rec.state()}
	switch in.State {
	case stateStarting:
		return in
	case stateFailed:
		if rec.err != nil {
			in.Error = rec.err.Error()
			return in
		}
	}
	in.Profile = rec.run.Profile().Name
	in.Phases = rec.run.Profile().Phases
	res := rec.run.Result()
	if in.Error == "" {
		in.Error = res.Err
	}
	if withResult {
		in.Result = &res
	}
	return in
}

// errBusy is the answer to a second run while one is active.
var errBusy = errors.New("a run is active")

// close stops the active run and waits until every run has ended and put back what it
// changed, or ctx ends. No run starts afterwards. The process calls it as it stops, while
// the system the runs drive still serves.
func (rs *runs) close(ctx context.Context) error {
	rs.mu.Lock()
	rs.closed = true
	alive := rs.alive
	rs.mu.Unlock()
	if alive != nil {
		alive.stop()
	}
	done := make(chan struct{})
	go func() {
		rs.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs not put back: %w", ctx.Err())
	}
}

// start begins a run of the named scenario and profile ("" = the scenario's first) and
// returns its record at once; the run sets the system up in the background.
func (rs *runs) start(name, profile string, duration time.Duration) (*runRecord, error) {
	sc, err := scenario.Find(rs.scenarios, name)
	if err != nil {
		return nil, problem.InvalidField("scenario", "%v", err)
	}
	p, err := sc.Profile(profile)
	if err != nil {
		return nil, problem.InvalidField("profile", "%v", err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return nil, problem.New(problem.Unavailable, "the playground is stopping; it starts no new run")
	}
	if err := rs.checkReplayed(); err != nil {
		return nil, err
	}
	if rs.alive != nil && rs.alive.active() {
		return nil, &problem.Error{Code: problem.Conflict, Err: errBusy,
			Message: fmt.Sprintf("run %s (%s) is still %s; stop it first: the playground runs one scenario at a time", rs.alive.ID, rs.alive.Scenario.Name, rs.alive.state())}
	}
	rs.next++
	ctx, cancel := context.WithCancel(rs.ctx)
	rec := &runRecord{ID: "r" + strconv.Itoa(rs.next), Scenario: sc, Profile: p.Name, cancel: cancel, started: make(chan struct{})}
	rs.alive = rec
	rs.all = append(rs.all, rec)
	rs.byID[rec.ID] = rec
	if len(rs.all) > keepRuns {
		delete(rs.byID, rs.all[0].ID)
		rs.all = rs.all[1:]
	}

	o := rs.options
	o.Duration = duration
	o.Log = rs.log.With("run", rec.ID)
	o.Actor = "playground/" + rec.ID
	rs.running.Add(1)
	go func() {
		defer rs.running.Done()
		defer cancel()
		t, err := rs.target()
		if err == nil {
			rec.run, err = scenario.Start(ctx, sc, p.Name, t, o)
		}
		rec.err = err
		close(rec.started)
		if err != nil {
			rs.log.Warn("run did not start", "run", rec.ID, "scenario", sc.Name, "error", err)
			return
		}
		rs.log.Info("run started", "run", rec.ID, "scenario", sc.Name, "profile", p.Name)
		<-rec.run.Done()
		rs.log.Info("run ended", "run", rec.ID, "passed", rec.run.Result().Passed())
	}()
	return rec, nil
}

// get returns the run with id, or a NotFound problem.
func (rs *runs) get(id string) (*runRecord, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec, ok := rs.byID[id]
	if !ok {
		return nil, problem.New(problem.NotFound, "no run %q (runs are kept in memory, the last %d of them)", id, keepRuns)
	}
	return rec, nil
}

// list returns the runs kept, newest first.
func (rs *runs) list() []runInfo {
	rs.mu.Lock()
	all := append([]*runRecord(nil), rs.all...)
	rs.mu.Unlock()
	out := make([]runInfo, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		out = append(out, all[i].info(false))
	}
	return out
}

// stop ends a run: a running one stops its load and reports what ran; a starting one
// abandons its set-up.
func (rec *runRecord) stop() {
	select {
	case <-rec.started:
		if rec.run != nil {
			rec.run.Stop()
		}
	default:
		rec.cancel()
	}
}

// handleScenarios lists the scenarios with their profiles, knobs, counters and explainers,
// the rate limiter's decision paths with their colours and explanations, and the series'
// colours (scenario.Palette): everything the page needs to offer the scenarios and draw their
// runs as the report does.
func handleScenarios(rs *runs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, struct {
			Scenarios        []scenario.Scenario     `json:"scenarios"`
			DecisionPaths    []scenario.DecisionPath `json:"decision_paths"`
			OtherPathColours []string                `json:"other_path_colours"`
			OtherPathHelp    string                  `json:"other_path_help"`
			Palette          map[string]string       `json:"palette"`
			SeriesCycle      []string                `json:"series_cycle"`
		}{rs.scenarios, scenario.DecisionPaths, scenario.OtherPathColours, scenario.OtherPathHelp, scenario.Palette, scenario.SeriesCycle})
	})
}

// handleStartRun is POST /api/runs {scenario, profile, duration}: it answers 202 with the
// run's id at once, while the run sets the system up; GET /api/runs/{id}/events follows it.
// duration, when set, is from 1s to MaxRunDuration.
func handleStartRun(rs *runs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Scenario string `json:"scenario"`
			Profile  string `json:"profile"`
			// Duration, when set, shortens or stretches the profile to about this long.
			Duration string `json:"duration"`
		}
		if err := httpapi.DecodeJSON(r, &in); err != nil {
			problem.Write(w, r, rs.log, err)
			return
		}
		var d time.Duration
		if in.Duration != "" {
			var err error
			if d, err = time.ParseDuration(in.Duration); err != nil || d < time.Second || d > MaxRunDuration {
				problem.Write(w, r, rs.log, problem.InvalidField("duration", "want a duration from 1s to %v, such as 30s or 2m", MaxRunDuration))
				return
			}
		}
		rec, err := rs.start(in.Scenario, in.Profile, d)
		if err != nil {
			problem.Write(w, r, rs.log, err)
			return
		}
		w.Header().Set("Location", "/api/runs/"+rec.ID)
		httpapi.WriteJSON(w, http.StatusAccepted, rec.info(false))
	})
}

// handleListRuns lists the runs kept, newest first, so a page opened mid-run can find it;
// putting_back says a dead process's changes are still being put back, and no run starts yet.
func handleListRuns(rs *runs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, struct {
			Runs        []runInfo `json:"runs"`
			PuttingBack bool      `json:"putting_back,omitempty"`
		}{rs.list(), rs.puttingBack()})
	})
}

// withRun serves a route of one run: it finds the run the path's {id} names, answering 404
// for one that is unknown or no longer kept, and hands it to h.
func withRun(rs *runs, h func(w http.ResponseWriter, r *http.Request, rec *runRecord)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, err := rs.get(r.PathValue("id"))
		if err != nil {
			problem.Write(w, r, rs.log, err)
			return
		}
		h(w, r, rec)
	})
}

// handleGetRun is a run's state and result: partial while it runs, final once done.
func handleGetRun(rs *runs) http.Handler {
	return withRun(rs, func(w http.ResponseWriter, r *http.Request, rec *runRecord) {
		httpapi.WriteJSON(w, http.StatusOK, rec.info(true))
	})
}

// handleStopRun stops a run; stopping a finished run is not an error.
func handleStopRun(rs *runs) http.Handler {
	return withRun(rs, func(w http.ResponseWriter, r *http.Request, rec *runRecord) {
		rec.stop()
		httpapi.WriteJSON(w, http.StatusAccepted, rec.info(false))
	})
}

// handleSetKnob is POST /api/runs/{id}/knobs {name, value}: it changes the running system
// now (the gateway's admin API or a control hook) and the change joins the run's timeline.
func handleSetKnob(rs *runs) http.Handler {
	return withRun(rs, func(w http.ResponseWriter, r *http.Request, rec *runRecord) {
		var in struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}
		if err := httpapi.DecodeJSON(r, &in); err != nil {
			problem.Write(w, r, rs.log, err)
			return
		}
		if rec.Scenario.Knob(in.Name) == nil {
			problem.Write(w, r, rs.log, problem.InvalidField("name", "%s has no knob %q", rec.Scenario.Name, in.Name))
			return
		}
		if st := rec.state(); st != stateRunning {
			problem.Write(w, r, rs.log, problem.New(problem.Conflict, "run %s is %s; knobs turn only while it runs", rec.ID, st))
			return
		}
		// Bounded: the change goes over the admin API or NATS, and a person is waiting.
		ctx, cancel := context.WithTimeout(r.Context(), knobTimeout)
		defer cancel()
		if err := rec.run.SetKnob(ctx, in.Name, in.Value); err != nil {
			// The runner's message says what the system refused and why; a student needs it.
			problem.Write(w, r, rs.log, &problem.Error{Code: problem.Unprocessable, Field: "value", Message: err.Error(), Err: err})
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}{in.Name, in.Value})
	})
}
