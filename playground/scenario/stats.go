package scenario

// Stats summarises a phase, or the whole run (Phase ""), optionally for one stream.
type Stats struct {
	Phase        string  `json:"phase"`
	Seconds      float64 `json:"seconds"`
	Sent         int     `json:"sent"`
	Requests     int     `json:"requests"`
	OK           int     `json:"ok"`
	TooMany      int     `json:"too_many"`
	Unavailable  int     `json:"unavailable"`
	ServerErrors int     `json:"server_errors"`
	ClientErrors int     `json:"client_errors"`
	Timeouts     int     `json:"timeouts"`
	Goodput      int     `json:"goodput"`
	// Latency of accepted attempts over the phase, in milliseconds.
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	// Streams holds the same numbers per stream, when the scenario has more than one.
	Streams map[string]*Stats `json:"streams,omitempty"`
	// Counters are the scenario's own counters at the end of the phase.
	Counters map[string]float64 `json:"counters,omitempty"`
}

// Metrics a Measure may name, computed from a Stats by Metric.
var metrics = map[string]func(s *Stats) float64{
	"sent":          func(s *Stats) float64 { return float64(s.Sent) },
	"requests":      func(s *Stats) float64 { return float64(s.Requests) },
	"ok":            func(s *Stats) float64 { return float64(s.OK) },
	"too_many":      func(s *Stats) float64 { return float64(s.TooMany) },
	"unavailable":   func(s *Stats) float64 { return float64(s.Unavailable) },
	"server_errors": func(s *Stats) float64 { return float64(s.ServerErrors) },
	"client_errors": func(s *Stats) float64 { return float64(s.ClientErrors) },
	"timeouts":      func(s *Stats) float64 { return float64(s.Timeouts) },
	"goodput":       func(s *Stats) float64 { return float64(s.Goodput) },
	"p50":           func(s *Stats) float64 { return s.P50 },
	"p95":           func(s *Stats) float64 { return s.P95 },
	"p99":           func(s *Stats) float64 { return s.P99 },
	// amplification is attempts per unique request (1 = no retries).
	"amplification": func(s *Stats) float64 { return ratio(float64(s.Sent), float64(s.Requests)) },
	// success_ratio is the share of unique requests that succeeded.
	"success_ratio": func(s *Stats) float64 { return ratio(float64(s.Goodput), float64(s.Requests)) },
	// too_many_ratio and unavailable_ratio are shares of completed attempts.
	"too_many_ratio": func(s *Stats) float64 { return ratio(float64(s.TooMany), float64(s.completed())) },
	"unavailable_ratio": func(s *Stats) float64 {
		return ratio(float64(s.Unavailable+s.ServerErrors+s.Timeouts), float64(s.completed()))
	},
	"goodput_per_second": func(s *Stats) float64 { return ratio(float64(s.Goodput), s.Seconds) },
}

func (s *Stats) completed() int {
	return s.OK + s.TooMany + s.Unavailable + s.ServerErrors + s.ClientErrors + s.Timeouts
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// validMetric reports whether name is a metric of Stats or a counter ("counter:<name>").
func validMetric(name string) bool {
	if _, ok := metrics[name]; ok {
		return true
	}
	return len(name) > len("counter:") && name[:len("counter:")] == "counter:"
}
