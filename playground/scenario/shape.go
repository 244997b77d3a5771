package scenario

// shapeLimit makes l, the scenario's limit, shape rather than refuse when the queue knob
// says so: a gcra (a queue is one that delays instead of refusing, whatever the algorithm
// knob says) whose queue holds size requests, the burst knob's; the requests over the rate
// wait up to maxDelay ("delay"), or pass at once and are counted ("nodelay"). "off" or ""
// leaves l as it is. See docs/lessons/algorithms.md, "Throttling by delay".
func shapeLimit(l *adminLimit, queue string, size int, maxDelay string) {
	if queue != "delay" && queue != "nodelay" {
		return
	}
	l.Algorithm, l.Burst = "gcra", 0
	l.Queue = &adminQueue{Size: max(1, size), NoDelay: queue == "nodelay"}
	if queue == "delay" && maxDelay != "0s" {
		l.Queue.MaxDelay = maxDelay
	}
}
