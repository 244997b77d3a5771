package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// How often the event stream looks for new timeline entries (knob changes, phases), and how
// often it writes a comment so that idle proxies keep the connection open.
const (
	eventPoll = 250 * time.Millisecond
	keepAlive = 15 * time.Second
)

// handleRunEvents is GET /api/runs/{id}/events, a Server-Sent Events stream of one run:
//
//	event: state   the run's runInfo, first and whenever its state changes
//	event: sample  one scenario.Sample per second of the run
//	event: event   one scenario.Event of the timeline (phase, knob, setup, error)
//	event: result  the final scenario.Result; the stream then ends
//
// A late joiner first gets the run's history (every sample and event so far), then the live
// ones, so every page shows the whole run. The stream ends when the run does, when the
// client leaves, or when the process stops (ctx): an open stream must never hold up a
// graceful shutdown.
func handleRunEvents(ctx context.Context, rs *runs) http.Handler {
	return withRun(rs, func(w http.ResponseWriter, r *http.Request, rec *runRecord) {
		rc := http.NewResponseController(w)
		// The server's write timeout is for ordinary answers; a stream lasts as long as its run.
		_ = rc.SetWriteDeadline(time.Time{})
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no") // nginx in compose: do not buffer the stream
		w.WriteHeader(http.StatusOK)
		s := &stream{w: w, rc: rc}
		// Tell EventSource how soon to reconnect after a dropped connection.
		if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
			return
		}

		reqCtx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(ctx, cancel) // the process stopping ends the stream too
		defer stop()
		done := reqCtx.Done()
		select {
		case <-rec.started:
		default:
			// Set-up can take a while (logging fans in): say so at once.
			if s.send("state", rec.info(false)) != nil {
				return
			}
			select {
			case <-rec.started:
			case <-done:
				return
			}
		}
		if rec.run == nil {
			_ = s.send("state", rec.info(false)) // failed to start, and why
			return
		}
		follow(done, s, rec)
	})
}

// follow streams a started run: history first, then live samples and timeline entries,
// then the result.
func follow(done <-chan struct{}, s *stream, rec *runRecord) {
	run := rec.run
	// Subscribe before reading the history, so no sample falls between the two; the few
	// that are in both are skipped by their second.
	live, unsubscribe := run.Subscribe()
	defer unsubscribe()
	if s.send("state", rec.info(false)) != nil {
		return
	}
	lastT := -1
	for _, smp := range run.History() {
		if s.send("sample", smp) != nil {
			return
		}
		lastT = smp.T
	}
	sentEvents := 0
	flushEvents := func() error {
		evs := run.Events()
		for ; sentEvents < len(evs); sentEvents++ {
			if err := s.send("event", evs[sentEvents]); err != nil {
				return err
			}
		}
		return nil
	}
	if flushEvents() != nil {
		return
	}

	poll := time.NewTicker(eventPoll)
	defer poll.Stop()
	idle := time.NewTicker(keepAlive)
	defer idle.Stop()
	for {
		select {
		case smp, ok := <-live:
			if !ok {
				finish(done, s, rec, flushEvents)
				return
			}
			if smp.T <= lastT {
				continue
			}
			lastT = smp.T
			if flushEvents() != nil || s.send("sample", smp) != nil {
				return
			}
		case <-poll.C:
			if flushEvents() != nil {
				return
			}
		case <-idle.C:
			if s.comment("keep-alive") != nil {
				return
			}
		case <-done:
			return
		}
	}
}

// finish sends what the run recorded last and its result, once it is final.
func finish(done <-chan struct{}, s *stream, rec *runRecord, flushEvents func() error) {
	select {
	case <-rec.run.Done():
	case <-done:
		return
	}
	if flushEvents() != nil {
		return
	}
	res := rec.run.Result()
	if s.send("state", rec.info(false)) != nil {
		return
	}
	_ = s.send("result", res)
}

// stream writes Server-Sent Events, flushing each so the browser sees it at once.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *stream) send(event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", event, err)
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// comment writes a line the browser ignores.
func (s *stream) comment(text string) error {
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	return s.rc.Flush()
}
