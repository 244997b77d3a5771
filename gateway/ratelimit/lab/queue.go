package lab

import "boxoffice.dev/gateway/ratelimit"

// QueueLabel names the lab's line for a gcra with a queue (Config.MaxDelay): the leaky
// bucket as a queue, docs/lessons/algorithms.md, "Throttling by delay".
const QueueLabel = "gcra+queue"

// replayQueue runs trace through a gcra that queues: Burst (the limit when 0) is the queue's
// size, the request leaving now included, and cfg.MaxDelay bounds a wait.
func replayQueue(trace []Request, cfg Config) (Result, error) {
	size := cfg.Burst
	if size == 0 {
		size = cfg.Limit
	}
	res, err := replay(trace, ratelimit.Rule{ID: QueueLabel, Algorithm: ratelimit.GCRA, Limit: cfg.Limit,
		Window: cfg.Window, Burst: size, MaxDelay: cfg.MaxDelay}, nil)
	res.Label = QueueLabel
	return res, err
}
