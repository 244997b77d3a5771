package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/pace"
	"boxoffice.dev/playground/load"
)

// Options are a run's optional settings; the zero value runs the profile as written.
type Options struct {
	// Duration, when positive, scales every phase so the profile lasts about this long
	// (each phase keeps its share, and lasts at least a second).
	Duration time.Duration
	// Now and Sleep are the clock; nil means the wall clock. The load schedule, the retry
	// back-offs, the phase changes and the per-second samples all read it.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand is the randomness (jitter, greedy fans); nil means a source seeded from the clock.
	// The run serialises its use.
	Rand *rand.Rand
	// Log records knob changes and set-up steps; nil discards.
	Log *slog.Logger
	// MaxInFlight bounds the jobs open at once; 0 means 2000. Arrivals beyond it are
	// counted as client errors rather than delayed, so the schedule stays open-model.
	MaxInFlight int
	// Journal, when set, records each change the run makes before it makes it, and drops
	// it once put back: a process that dies mid-run leaves them there for the next one to
	// put back (PutBack). Nil: what the run changed lives only in memory, and is lost with
	// the process.
	Journal *Journal
	// Actor names the run's changes in the gateway's audit trail (the admin API's Admin-Actor
	// header, recorded as "admin:<Actor>"); "" means "playground". Result.Audit lists them.
	Actor string
}

// Run is one scenario run in progress. Its methods are safe for concurrent use: the web UI
// subscribes and turns knobs while the runner's goroutines record.
type Run struct {
	sc      Scenario
	profile Profile
	target  Target
	o       Options
	log     *slog.Logger
	sys     *system
	rec     *load.Recorder
	eng     *load.Engine
	driver  driver
	streams []*stream
	starts  []time.Duration // each phase's start since the run began
	total   time.Duration

	cancel context.CancelFunc
	done   chan struct{}

	knobMu  sync.Mutex
	knobs   map[string]string
	budgets map[string]*load.Budget
	// setting holds one token: whoever turns knobs (setAll) holds it from setting the values
	// to recording them, so that changes reach the system in the order they were made and
	// the last value set is the one in force.
	setting chan struct{}

	randMu sync.Mutex

	mu       sync.Mutex
	series   []Sample
	events   []Event
	subs     map[chan Sample]struct{}
	result   Result
	restores []entry // what to put back, oldest first
	// What the run found before it changed it, to put back.
	origRoutes  map[string][]string
	origLimits  map[string]*adminLimit // nil value: the limit did not exist
	origBackend *control.Knobs
	retrySeen   bool
	origService *serviceKnobs // the backend service's knobs at the gateway, as found
	// concurrencyEdited: the backend's concurrency limit at the gateway has been changed.
	concurrencyEdited bool
	// storeTouched: the run has faulted the limiter's store, and brings it back up as it ends.
	storeTouched bool
	// final are the driver's tallies after the load (seats sold, oversold), added to the
	// run's counters.
	final map[string]float64

	// decisions turns the gateway's decision totals into Sample.Decisions, and outcomes
	// its totals by outcome and rule into the counters named so; the sampler's.
	decisions, outcomes decisionCounts
}

// setFinal records the driver's end-of-run tallies.
func (r *Run) setFinal(m map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.final = m
}

// stream is a StreamSpec with its identities.
type stream struct {
	StreamSpec
	ids []load.Identity
}

// identity is the index in ids of the identity arrival n sends as: each in turn.
func (s *stream) identity(n int64) int { return int(n % int64(len(s.ids))) }

// driver is what a scenario's arrivals do beyond the load engine: set-up before the run,
// one arrival's job, the counters polled every second, and the final tally.
type driver interface {
	setup(ctx context.Context, r *Run) error
	job(r *Run, s *stream) func(ctx context.Context, c *load.Client, n int64)
	poll(ctx context.Context, r *Run) map[string]float64
	finish(ctx context.Context, r *Run)
}

// Start sets the system up for sc's profile — knob defaults, the backend's capacity, the
// scenario's limit, logged-in users — then runs its phases in the background. It returns once
// set-up is done (or failed; the system is then put back). The run ends when its phases do,
// when Stop is called or when ctx ends, and puts every knob it turned back as it found it.
func Start(ctx context.Context, sc Scenario, profile string, t Target, o Options) (*Run, error) {
	p, err := sc.Profile(profile)
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = clock.Sleep
	}
	if o.Rand == nil {
		seed := uint64(o.Now().UnixNano())
		o.Rand = rand.New(rand.NewPCG(seed, seed>>1|1))
	}
	if o.Log == nil {
		o.Log = logging.Discard()
	}
	r := &Run{
		sc: sc, profile: scale(*p, o.Duration), target: t, o: o,
		log:  o.Log.With("scenario", sc.Name, "profile", p.Name),
		done: make(chan struct{}), knobs: map[string]string{}, budgets: map[string]*load.Budget{},
		setting: make(chan struct{}, 1),
		subs:    map[chan Sample]struct{}{},
	}
	for _, k := range sc.Knobs {
		r.knobs[k.Name] = k.Default
	}
	var at time.Duration
	for _, ph := range r.profile.Phases {
		r.starts = append(r.starts, at)
		at += ph.Duration.D()
	}
	r.total = at
	switch sc.Driver {
	case "flash-sale":
		r.driver = &flashSale{}
	case "multi-region":
		r.driver = &multiRegion{}
	default:
		r.driver = requestDriver{}
	}
	r.sys, err = newSystem(t)
	if err != nil {
		return nil, err
	}
	if o.Actor != "" {
		r.sys.actor = o.Actor
	}
	r.result = Result{Scenario: sc.Name, Profile: p.Name}

	setupCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := r.setup(setupCtx); err != nil {
		r.putBack()
		r.sys.close()
		return nil, fmt.Errorf("set up %s: %w", sc.Name, err)
	}

	// The run's second 0 starts now, set-up done, from the gateway's decisions so far.
	byPath, byOutcome := r.sys.decisionTotals(setupCtx)
	r.decisions.next(byPath)
	r.outcomes.next(byOutcome)
	r.rec = load.NewRecorder(r.o.Now)
	timeout := r.sc.Client.Timeout.D()
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	r.eng = &load.Engine{
		Recorder: r.rec, Now: r.o.Now, Sleep: r.o.Sleep, Rand: r.rand, Timeout: timeout,
		MaxInFlight: r.o.MaxInFlight, Poisson: true,
	}
	r.result.Started = r.rec.Start()
	runCtx, stop := context.WithCancel(ctx)
	r.cancel = stop
	go r.run(runCtx)
	return r, nil
}

// scale stretches or shrinks every phase so the profile lasts about d.
func scale(p Profile, d time.Duration) Profile {
	total := p.Duration()
	phases := make([]Phase, len(p.Phases))
	copy(phases, p.Phases)
	p.Phases = phases
	if d <= 0 || total <= 0 {
		return p
	}
	f := float64(d) / float64(total)
	for i := range p.Phases {
		ph := &p.Phases[i]
		ph.Duration = Duration(max(time.Duration(float64(ph.Duration)*f).Round(time.Second), time.Second))
		ph.Settle = Duration(min(time.Duration(float64(ph.Settle)*f).Round(time.Second), ph.Duration.D()-time.Second))
	}
	return p
}

// setup readies the system: the first phase's knobs on top of the defaults, then the
// driver's own set-up (users, events).
func (r *Run) setup(ctx context.Context) error {
	r.event(0, "setup", fmt.Sprintf("profile %s: %d phases, %v", r.profile.Name, len(r.profile.Phases), r.total))
	if len(r.profile.Phases) > 0 {
		for k, v := range r.profile.Phases[0].Knobs {
			r.knobs[k] = v
		}
	}
	for _, spec := range r.sc.Streams {
		r.streams = append(r.streams, &stream{StreamSpec: spec})
	}
	if err := r.driver.setup(ctx, r); err != nil {
		return err
	}
	if err := r.applyAll(ctx); err != nil {
		return err
	}
	return nil
}

// run is the run's life after set-up: the load, the phase changes and the sampler, then the
// tally and the clean-up.
func (r *Run) run(ctx context.Context) {
	defer close(r.done)
	defer r.sys.close()

	timeout := r.eng.Timeout
	// Jobs still running when the phases end get a grace period, then are cut off: a job's
	// retries and back-offs must not keep the run open for long.
	jobsCtx, cancelJobs := context.WithCancel(ctx)
	defer cancelJobs()
	grace := 2*timeout + 2*time.Second

	var wg sync.WaitGroup
	loadDone := make(chan struct{})
	wg.Go(func() {
		defer close(loadDone)
		var streams []load.Stream
		for _, s := range r.streams {
			streams = append(streams, load.Stream{
				Name: s.Name, Rate: r.rateFunc(s), Behaviour: r.behaviour, Budget: r.budget(s.Name),
				Pacer: r.pacers(s), Job: r.driver.job(r, s),
			})
		}
		err := r.eng.Run(jobsCtx, r.total, streams...)
		if err != nil && ctx.Err() == nil {
			r.event(r.rec.Elapsed(), "error", err.Error())
		}
	})
	wg.Go(func() { r.phases(ctx) })
	wg.Go(func() {
		select {
		case <-loadDone:
		case <-ctx.Done():
		case <-r.after(ctx, r.total+grace):
			cancelJobs()
		}
	})
	r.sample(ctx, loadDone)
	wg.Wait()

	// What the run changed goes back before the driver's tally, which may wait up to a
	// minute for orders to settle: a process stopping mid-run has only its shutdown timeout,
	// and the gateway's limits must not outlive the run. The tally reads no restored knob.
	stopped := ctx.Err() != nil
	r.putBack()
	cleanup, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.driver.finish(cleanup, r)
	r.readAudit(cleanup)
	r.finish(stopped)
}

// after returns a channel closed d after the run's start, or never when ctx ends first.
func (r *Run) after(ctx context.Context, d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		if r.o.Sleep(ctx, r.rec.Start().Add(d).Sub(r.o.Now())) == nil {
			close(ch)
		}
	}()
	return ch
}

// phases puts each phase's knobs in force as it starts.
func (r *Run) phases(ctx context.Context) {
	for i, ph := range r.profile.Phases {
		if wait := r.rec.Start().Add(r.starts[i]).Sub(r.o.Now()); wait > 0 {
			if r.o.Sleep(ctx, wait) != nil {
				return
			}
		}
		what := fmt.Sprintf("%s begins: %v at %s/s", ph.Name, ph.Duration.D(), rateText(ph))
		r.event(r.rec.Elapsed(), "phase", what)
		r.log.Info("phase", "name", ph.Name)
		if i == 0 {
			continue // its knobs were set with the system
		}
		for _, err := range r.setAll(ctx, ph.Knobs, "phase "+ph.Name) {
			r.event(r.rec.Elapsed(), "error", err.Error())
		}
	}
}

func rateText(ph Phase) string {
	if ph.To != 0 && ph.To != ph.Rate {
		return fmt.Sprintf("%g→%g", ph.Rate, ph.To)
	}
	return strconv.FormatFloat(ph.Rate, 'g', -1, 64)
}

// phaseAt is the index of the phase running at elapsed.
func (r *Run) phaseAt(elapsed time.Duration) int {
	i := 0
	for j, s := range r.starts {
		if elapsed >= s {
			i = j
		}
	}
	return i
}

// rateFunc is a stream's arrival rate: its knob's value, or the phase's rate (ramped).
func (r *Run) rateFunc(s *stream) func(time.Duration) float64 {
	if s.RateKnob != "" {
		return func(time.Duration) float64 {
			v, _ := strconv.ParseFloat(r.knob(s.RateKnob), 64)
			return v
		}
	}
	return func(elapsed time.Duration) float64 {
		i := r.phaseAt(elapsed)
		ph := r.profile.Phases[i]
		if ph.To == 0 || ph.To == ph.Rate {
			return ph.Rate
		}
		f := float64(elapsed-r.starts[i]) / float64(ph.Duration.D())
		return ph.Rate + (ph.To-ph.Rate)*math.Min(math.Max(f, 0), 1)
	}
}

// behaviour is the clients' retry behaviour as the knobs say now.
func (r *Run) behaviour() load.Behaviour {
	policy, retries := r.sc.Client.Retry, r.sc.Client.Retries
	if v := r.knob("retry"); v != "" {
		policy = v
	}
	if v, err := strconv.Atoi(r.knob("retries")); err == nil {
		retries = v
	}
	b, _ := load.Policy(policy, retries) // validated with the knob
	if v, err := strconv.ParseBool(r.knob("jitter")); err == nil && b.Backoff > 0 {
		b.Jitter = v
	}
	if v, err := strconv.ParseFloat(r.knob("budget"), 64); err == nil && b.Retries > 0 {
		b.Budget = v
	}
	return b
}

// pacers gives each of the stream's identities a pacer of its own, for the run: a simulated
// client paces from the budget the gateway reports to it, and keeps what it learnt from
// one request to the next.
func (r *Run) pacers(s *stream) func(n int64) *pace.Pacer {
	if len(s.ids) == 0 {
		return nil // the engine's own, one for the stream
	}
	ps := make([]*pace.Pacer, len(s.ids))
	for i := range ps {
		ps[i] = &pace.Pacer{Clock: clock.Func(r.o.Now), Sleep: r.o.Sleep, MaxWait: min(paceMaxWait, r.eng.Timeout)}
	}
	return func(n int64) *pace.Pacer { return ps[s.identity(n)] }
}

// paceMaxWait is how long a simulated pacing client waits for its budget before it gives
// the request up unsent: about what a person waits on a page before trying something else.
// Offered more than its limit, it gives up the excess either way; a longer wait only adds
// to the latency of what it sends.
const paceMaxWait = time.Second

// budget is the stream's retry budget, one per stream for the whole run.
func (r *Run) budget(name string) *load.Budget {
	r.knobMu.Lock()
	defer r.knobMu.Unlock()
	b := r.budgets[name]
	if b == nil {
		b = load.NewBudget(0, 0)
		r.budgets[name] = b
	}
	return b
}

func (r *Run) knob(name string) string {
	r.knobMu.Lock()
	defer r.knobMu.Unlock()
	return r.knobs[name]
}

func (r *Run) rand() float64 {
	r.randMu.Lock()
	defer r.randMu.Unlock()
	return r.o.Rand.Float64()
}

// SetKnob changes a knob of the running system now (name as in Scenario.Knobs, value in the
// knob's kind) and records it on the timeline. A later phase that sets the same knob
// overrides it.
func (r *Run) SetKnob(ctx context.Context, name, value string) error {
	select {
	case <-r.done:
		return errors.New("the run has ended")
	default:
	}
	return r.set(ctx, name, value, "set by hand")
}

func (r *Run) set(ctx context.Context, name, value, who string) error {
	return errors.Join(r.setAll(ctx, map[string]string{name: value}, who)...)
}

// setAll turns several knobs at once, as a phase does: every value is in place before any
// is applied, and each group of knobs applied together (knobGroup) is applied once, so that
// a group never goes through a mix of old and new values. A group that fails keeps its old
// values; the errors are returned, one per knob or group that failed.
//
// Calls run one at a time, each from setting its values to recording them: two people
// turning the same knob at once would otherwise race their admin calls, and the slower,
// earlier one would land last and stay in force while the run reports the other. A call
// that cannot take its turn before ctx ends changes nothing.
func (r *Run) setAll(ctx context.Context, values map[string]string, who string) []error {
	select {
	case r.setting <- struct{}{}:
		defer func() { <-r.setting }()
	case <-ctx.Done():
		return []error{fmt.Errorf("waiting for another knob change: %w", ctx.Err())}
	}
	var errs []error
	names := slices.Sorted(maps.Keys(values))
	old := map[string]string{}
	groups := map[string][]string{}
	var order []string
	r.knobMu.Lock()
	for _, name := range names {
		k := r.sc.Knob(name)
		if k == nil {
			errs = append(errs, fmt.Errorf("scenario %s has no knob %q", r.sc.Name, name))
			continue
		}
		if err := k.check(values[name]); err != nil {
			errs = append(errs, fmt.Errorf("knob %s: %w", name, err))
			continue
		}
		old[name] = r.knobs[name]
		r.knobs[name] = values[name]
		g := knobGroup(name)
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], name)
	}
	r.knobMu.Unlock()
	for _, g := range order {
		turned := groups[g]
		if err := r.apply(ctx, turned[0]); err != nil {
			r.knobMu.Lock()
			for _, name := range turned {
				r.knobs[name] = old[name]
			}
			r.knobMu.Unlock()
			errs = append(errs, fmt.Errorf("knob %s: %w", strings.Join(turned, ", "), err))
			continue
		}
		for _, name := range turned {
			r.event(r.elapsed(), "knob", fmt.Sprintf("%s = %s (%s)", name, values[name], who))
			r.log.Info("knob", "name", name, "value", values[name], "by", who)
		}
	}
	return errs
}

// Subscribe returns a channel that receives every Sample recorded from now on, and a cancel
// function to call when done listening. The channel is closed when the run ends or cancel is
// called. Samples recorded before Subscribe are in History. A subscriber that does not keep
// up misses samples rather than slowing the run.
func (r *Run) Subscribe() (<-chan Sample, func()) {
	ch := make(chan Sample, 64)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.subs == nil { // ended
		close(ch)
		return ch, func() {}
	}
	r.subs[ch] = struct{}{}
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[ch]; ok {
			delete(r.subs, ch)
			close(ch)
		}
	}
}

// History returns every Sample recorded so far.
func (r *Run) History() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Sample(nil), r.series...)
}

// Events returns the timeline so far.
func (r *Run) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Scenario is the scenario being run.
func (r *Run) Scenario() Scenario { return r.sc }

// Profile is the profile being run, its phases scaled by Options.Duration.
func (r *Run) Profile() Profile { return r.profile }

// Knobs returns every knob's value in force now.
func (r *Run) Knobs() map[string]string {
	r.knobMu.Lock()
	defer r.knobMu.Unlock()
	out := make(map[string]string, len(r.knobs))
	for k, v := range r.knobs {
		out[k] = v
	}
	return out
}

// Stop ends the run early; its Result covers what ran and the system is put back. It
// returns at once (wait on Done) and is safe to call more than once.
func (r *Run) Stop() { r.cancel() }

// Done is closed when the run has ended and Result is final.
func (r *Run) Done() <-chan struct{} { return r.done }

// Result is the run's outcome: final once Done is closed, the series so far before.
func (r *Run) Result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.result
	res.Series = append([]Sample(nil), r.series...)
	res.Events = append([]Event(nil), r.events...)
	return res
}

// elapsed is the time since the run's second 0; 0 during set-up.
func (r *Run) elapsed() time.Duration {
	if r.rec == nil {
		return 0
	}
	return r.rec.Elapsed()
}

func (r *Run) event(at time.Duration, kind, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{At: at, Kind: kind, What: what})
}

// undo records how to put back something the run is about to change: in the journal, on
// disk, before it returns. On error the change must not be made: nothing would put it back
// if the process died.
func (r *Run) undo(e entry) error {
	e, err := r.o.Journal.add(e)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restores = append(r.restores, e)
	return nil
}

// undoEdit registers putting the gateway's stored edit of one limit, route or service back as
// the run found it, before the run changes that element.
func (r *Run) undoEdit(ctx context.Context, kind, id string) error {
	prior, err := r.sys.edit(ctx, kind, id)
	if err != nil {
		return err
	}
	return r.undo(entry{Kind: entryEdit, Element: kind, ID: id, Prior: prior})
}

// putBack puts back what the run changed, last first, each once, and drops from the journal
// what it put back; what failed stays there, for the next process to try again.
func (r *Run) putBack() {
	r.mu.Lock()
	rs := r.restores
	r.restores = nil
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, errs := r.sys.putBack(ctx, rs, r.log)
	for _, err := range errs {
		r.event(r.elapsed(), "error", err.Error())
	}
	if err := r.o.Journal.drop(done); err != nil {
		r.log.Warn("put-back journal", "error", err)
		r.event(r.elapsed(), "error", err.Error())
	}
}
