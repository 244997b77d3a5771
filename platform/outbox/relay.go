package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/sqldb"
)

// Publisher sends one message to JetStream and waits for its acknowledgement.
// jetstream.JetStream satisfies it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

var _ Publisher = jetstream.JetStream(nil)

// Retention is how long published rows stay in the outbox before the relay prunes them:
// long enough to look into what was sent recently, short enough that the table stays small.
const Retention = 24 * time.Hour

// pruneEvery spaces the relay's prune passes; pruning is housekeeping, not latency.
const pruneEvery = time.Minute

// maxBackoff caps the wait after a failed pass (database or JetStream unreachable), so a
// relay neither spins nor sleeps long past the recovery.
const maxBackoff = 5 * time.Second

// Relay publishes committed outbox rows to JetStream in seq order and marks them published.
//
// Set the fields, then call Run once; Notify may be called from any goroutine. Any number of
// relays may run over one table: each publishes the pending rows from the oldest, one at a
// time, waiting for each acknowledgement before the next, and stops a pass at the first
// failure. The first copy of every event therefore reaches the stream after the first copy
// of the events before it, so the stream's order is the outbox's; later copies are dropped
// by the stream's de-duplication (see the package comment).
type Relay struct {
	// DB holds the outbox table (see EnsureTable). Required.
	DB *sqldb.DB
	// JS publishes; a jetstream.JetStream. Required.
	JS Publisher
	// Log receives failures; nil discards them.
	Log *slog.Logger
	// Interval is how often the relay looks for rows when not notified; 0 means 100ms.
	Interval time.Duration
	// Batch is how many rows one pass reads; 0 means 100.
	Batch int
	// Clock stamps published_at and decides what is old enough to prune; nil means time.Now.
	Clock func() time.Time

	once   sync.Once
	wake   chan struct{}
	pruned time.Time
}

// Notify wakes the relay now instead of at its next interval; call it after committing a
// transaction that added events. It never blocks.
func (r *Relay) Notify() {
	r.init()
	select {
	case r.wake <- struct{}{}:
	default: // a wake-up is already pending; it will see this commit's rows too
	}
}

func (r *Relay) init() {
	r.once.Do(func() { r.wake = make(chan struct{}, 1) })
}

// Run relays until ctx is done, then returns nil. Failures are logged and retried with a
// growing pause; they never end Run.
func (r *Relay) Run(ctx context.Context) error {
	r.init()
	interval := r.Interval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	log := r.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	wait := interval
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-timer.C:
		}
		for {
			full, err := r.pass(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				wait = min(2*wait, maxBackoff)
				log.WarnContext(ctx, "outbox relay", "error", err, "retry_in", wait)
				break
			}
			wait = interval
			if !full { // a full batch means more rows may be waiting: go on at once
				break
			}
		}
		timer.Reset(wait)
	}
}

// pass publishes up to one batch and prunes when due. full reports a whole batch was
// published, so more rows may be pending.
func (r *Relay) pass(ctx context.Context) (full bool, err error) {
	now := r.now()
	if now.Sub(r.pruned) >= pruneEvery {
		if err := r.prune(ctx, now); err != nil {
			return false, err
		}
		r.pruned = now
	}
	batch := r.Batch
	if batch <= 0 {
		batch = 100
	}
	rows, err := r.pending(ctx, batch)
	if err != nil {
		return false, err
	}
	var done []any
	var pubErr error
	for _, row := range rows {
		if pubErr = r.publish(ctx, row); pubErr != nil {
			break
		}
		done = append(done, row.seq)
	}
	if err := r.markPublished(ctx, done); err != nil {
		return false, err
	}
	return len(rows) == batch && pubErr == nil, pubErr
}

type row struct {
	seq     int64
	id      string
	subject string
	payload []byte
	headers string
}

func (r *Relay) pending(ctx context.Context, limit int) ([]row, error) {
	rs, err := r.DB.QueryContext(ctx, r.DB.Rebind(
		`SELECT seq, id, subject, payload, headers FROM outbox WHERE published_at IS NULL ORDER BY seq LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("read pending: %w", err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var x row
		if err := rs.Scan(&x.seq, &x.id, &x.subject, &x.payload, &x.headers); err != nil {
			return nil, fmt.Errorf("read pending: %w", err)
		}
		out = append(out, x)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read pending: %w", err)
	}
	return out, nil
}

func (r *Relay) publish(ctx context.Context, x row) error {
	msg := nats.NewMsg(x.subject)
	msg.Data = x.payload
	if err := json.Unmarshal([]byte(x.headers), &msg.Header); err != nil {
		return fmt.Errorf("publish %s: headers: %w", x.id, err)
	}
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	if _, err := r.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(x.id)); err != nil {
		return fmt.Errorf("publish %s to %s: %w", x.id, x.subject, err)
	}
	return nil
}

func (r *Relay) markPublished(ctx context.Context, seqs []any) error {
	if len(seqs) == 0 {
		return nil
	}
	args := append([]any{r.now().UnixMilli()}, seqs...)
	q := `UPDATE outbox SET published_at = ? WHERE published_at IS NULL AND seq IN (?` + strings.Repeat(", ?", len(seqs)-1) + `)`
	if _, err := r.DB.ExecContext(ctx, r.DB.Rebind(q), args...); err != nil {
		return fmt.Errorf("mark published: %w", err)
	}
	return nil
}

func (r *Relay) prune(ctx context.Context, now time.Time) error {
	cutoff := now.Add(-Retention).UnixMilli()
	if _, err := r.DB.ExecContext(ctx, r.DB.Rebind(`DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < ?`), cutoff); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	return nil
}

func (r *Relay) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}
