package gateway

import "runtime/debug"

// DefaultGOGC is the garbage collector's target for a process that runs the gateway alone,
// when GOGC is not set. The gateway's live heap is a few megabytes (a policy snapshot, the
// token cache, connection buffers), so with Go's default of 100 it collects every few hundred
// requests, and those pauses and the CPU they take reach the p99. At 400 it collects a fifth
// as often for a heap that peaks at about five times the live one: tens of megabytes, well
// inside the memory the deployments give it (docs/benchmarks.md measures both).
const DefaultGOGC = 400

// TuneGC applies DefaultGOGC unless getenv sets GOGC. The setting is process-wide: call it
// from a main that runs only the gateway, never in the all-in-one mode, where it would apply
// to every component in the process.
func TuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGOGC)
	}
}
