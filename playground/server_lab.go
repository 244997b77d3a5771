package playground

import (
	"net/http"
	"strings"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/ratelimit/lab"
	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

// maxLabRequests bounds one replay: every algorithm walks the whole trace and the page draws
// every decision, so a pasted log of a million lines would stall both.
const maxLabRequests = 20000

// labRequest is POST /api/lab: a trace in the text form `boxoffice lab --trace` reads, and the
// same flags. Window is a Go duration ("1s", "500ms", "1m").
type labRequest struct {
	Trace      string   `json:"trace"`
	Limit      int      `json:"limit"`
	Window     string   `json:"window"`
	Burst      int      `json:"burst"`
	Algorithms []string `json:"algorithms"`
	// MaxDelay, a Go duration, adds the queue's line (lab.Config.MaxDelay); "" or "0s" none.
	MaxDelay string `json:"max_delay"`
	// Parent, Ceiling and Reserve put the trace's keys under one parent (lab.Config).
	Parent  int `json:"parent"`
	Ceiling int `json:"ceiling"`
	Reserve int `json:"reserve"`
	// Sync, a Go duration, adds the approximate lines (lab.Config.Sync) on Replicas replicas,
	// 0 meaning lab.DefaultReplicas; "" or "0s" none.
	Sync     string `json:"sync"`
	Replicas int    `json:"replicas"`
}

// labAnswer is what the lab page draws: the parsed trace (so times, keys and costs are read
// once, by the engine) and each algorithm's per-request decisions and remaining budgets, with
// its note if it has one, as `boxoffice lab --json` prints them.
type labAnswer struct {
	Requests []labTraceRequest `json:"requests"`
	Results  []lab.Result      `json:"results"`
}

type labTraceRequest struct {
	At   float64 `json:"at"` // seconds since the trace start
	Key  string  `json:"key"`
	Cost int     `json:"cost"`
}

// handleLabAlgorithms lists the algorithms the lab compares, in the order it replays them.
func handleLabAlgorithms() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, struct {
			Algorithms []ratelimit.Algorithm `json:"algorithms"`
		}{ratelimit.Algorithms})
	})
}

// handleLab replays a trace through the algorithms with lab.Replay, the engine behind
// `boxoffice lab`, so the page and the command give the same decisions for the same trace.
func handleLab() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in labRequest
		if err := httpapi.DecodeJSON(r, &in); err != nil {
			problem.Write(w, r, nil, err)
			return
		}
		trace, cfg, err := in.parse()
		if err != nil {
			problem.Write(w, r, nil, err)
			return
		}
		results, err := lab.Replay(trace, cfg)
		if err != nil {
			problem.Write(w, r, nil, problem.New(problem.Invalid, "%v", err))
			return
		}
		out := labAnswer{Requests: make([]labTraceRequest, len(trace)), Results: results}
		for i, q := range trace {
			out.Requests[i] = labTraceRequest{At: q.At.Seconds(), Key: q.Key, Cost: q.Cost}
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
	})
}

// parse validates the request the way `boxoffice lab` validates its flags.
func (in labRequest) parse() ([]lab.Request, lab.Config, error) {
	var cfg lab.Config
	if in.Limit < 1 {
		return nil, cfg, problem.InvalidField("limit", "must be at least 1")
	}
	window, err := time.ParseDuration(in.Window)
	if err != nil || window <= 0 {
		return nil, cfg, problem.InvalidField("window", "want a positive duration such as 1s or 500ms")
	}
	if in.Burst < 0 {
		return nil, cfg, problem.InvalidField("burst", "must not be negative (0 means the limit)")
	}
	switch {
	case in.Parent < 0:
		return nil, cfg, problem.InvalidField("parent", "must not be negative (0 means no parent)")
	case in.Ceiling < 0 || in.Ceiling > 0 && in.Parent == 0:
		return nil, cfg, problem.InvalidField("ceiling", "want 0 (the limit), or a rate at least the limit under a parent")
	case in.Reserve < 0 || in.Reserve > 0 && in.Parent == 0:
		return nil, cfg, problem.InvalidField("reserve", "want 0 (a tenth of the parent), or a number of units under a parent")
	}
	cfg = lab.Config{Limit: in.Limit, Window: window, Burst: in.Burst, Parent: in.Parent, Ceiling: in.Ceiling, Reserve: in.Reserve}
	if in.MaxDelay != "" {
		if cfg.MaxDelay, err = time.ParseDuration(in.MaxDelay); err != nil || cfg.MaxDelay < 0 {
			return nil, cfg, problem.InvalidField("max_delay", "want a duration such as 2s, or 0s for no queue")
		}
	}
	if err := in.parseSync(&cfg); err != nil {
		return nil, cfg, err
	}
	for _, name := range in.Algorithms {
		a, err := ratelimit.ParseAlgorithm(strings.TrimSpace(name))
		if err != nil {
			return nil, cfg, problem.InvalidField("algorithms", "%v", err)
		}
		cfg.Algorithms = append(cfg.Algorithms, a)
	}
	trace, err := lab.ParseTrace(strings.NewReader(in.Trace))
	if err != nil {
		return nil, cfg, problem.InvalidField("trace", "%v", err)
	}
	switch {
	case len(trace) == 0:
		return nil, cfg, problem.InvalidField("trace", "has no requests; write one per line, seconds[,key[,cost]]")
	case len(trace) > maxLabRequests:
		return nil, cfg, problem.InvalidField("trace", "has %d requests, more than the %d the lab replays", len(trace), maxLabRequests)
	}
	return trace, cfg, nil
}

// parseSync sets cfg's approximate lines, checking the sync as a policy's (ratelimit.CheckSync).
func (in labRequest) parseSync(cfg *lab.Config) error {
	if in.Sync != "" {
		sync, err := time.ParseDuration(in.Sync)
		switch {
		case err != nil || sync < 0:
			return problem.InvalidField("sync", "want a duration such as 100ms, or 0s for no approximate lines")
		case sync == 0:
		case cfg.Parent > 0:
			return problem.InvalidField("sync", "approximate lines and a parent do not combine: a level of a hierarchy is counted exactly")
		default:
			if err := ratelimit.CheckSync(sync, cfg.Window); err != nil {
				return problem.InvalidField("sync", "%v", err)
			}
		}
		cfg.Sync = sync
	}
	switch {
	case in.Replicas < 0 || in.Replicas > lab.MaxReplicas:
		return problem.InvalidField("replicas", "want 1 to %d (0 means %d)", lab.MaxReplicas, lab.DefaultReplicas)
	case in.Replicas > 0 && cfg.Sync == 0:
		return problem.InvalidField("replicas", "needs a sync: replicas count approximately only when they sync")
	}
	cfg.Replicas = in.Replicas
	return nil
}
