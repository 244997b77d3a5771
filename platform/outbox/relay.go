package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"boxoffice.dev/platform/sqldb"
)

// Publisher sends one message to JetStream and waits for its acknowledgement.
// jetstream.JetStream satisfies it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

var _ Publisher = jetstream.JetStream(nil)

// streamFinder names the stream that stores a subject, which tells a subject no stream
// stores from a stream briefly unavailable. A Publisher that is not one (a test double)
// leaves the relay unable to tell, so it waits.
type streamFinder interface {
	StreamNameBySubject(ctx context.Context, subject string) (string, error)
}

var _ streamFinder = jetstream.JetStream(nil)

// Retention is how long published rows stay in the outbox before the relay prunes them:
// long enough to look into what was sent recently, short enough that the table stays small.
const Retention = 24 * time.Hour

// pruneEvery spaces the relay's prune passes; pruning is housekeeping, not latency.
const pruneEvery = time.Minute

// maxBackoff caps the wait after a failed pass (database or JetStream unreachable), so a
// relay neither spins nor sleeps long past the recovery.
const maxBackoff = 5 * time.Second

// recordTimeout bounds the writes that record what a pass did. They do not end with the
// relay's context: rows JetStream acknowledged before a stop are marked, or the next relay
// would send them again, and past the stream's duplicate window store them twice.
const recordTimeout = 5 * time.Second

// Relay publishes committed outbox rows to JetStream in seq order, one at a time, and marks
// them published; a pass stops at the first failure that may pass, so the stream's order is
// the outbox's. A row JetStream can never accept is set aside (failed_at, counted). Set the
// fields, call Run once; Notify is safe from any goroutine; any number may share a table.
// See docs/adr/0005-nats-jetstream-for-events.md.
type Relay struct {
	// DB holds the outbox table (see EnsureTable). Required.
	DB *sqldb.DB
	// JS publishes; a jetstream.JetStream. Required. Only one that can also look streams up
	// (StreamNameBySubject, as jetstream.JetStream does) lets the relay set aside a row whose
	// subject no stream stores.
	JS Publisher
	// Log receives failures; nil discards them.
	Log *slog.Logger
	// Interval is how often the relay looks for rows when not notified; 0 means 100ms.
	Interval time.Duration
	// Batch is how many rows one pass reads; 0 means 100.
	Batch int
	// Clock stamps published_at and failed_at and decides what is old enough to prune; nil
	// means time.Now.
	Clock func() time.Time
	// Ensure creates or updates the stream the relay publishes to (natsconn.EnsureStream).
	// When a publish finds no stream for a row's subject, the relay calls it once in that
	// pass and looks again: a stream deleted under the relay comes back, and a subject still
	// without a stream is set aside. Nil means the relay cannot tell a subject no stream
	// stores from a stream not created yet, so it waits, retrying, as for any failure that
	// may pass.
	Ensure func(ctx context.Context) error
	// MeterProvider receives the gauge boxoffice.outbox.set_aside; nil means no metrics.
	MeterProvider metric.MeterProvider

	once     sync.Once
	wake     chan struct{}
	log      *slog.Logger
	pruned   time.Time
	setAside atomic.Int64 // rows set aside in the table, as last counted
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
	r.log = r.Log
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log := r.log
	if err := r.observe(); err != nil {
		log.WarnContext(ctx, "outbox relay metrics", "error", err)
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

// observe registers the gauge boxoffice.outbox.set_aside.
func (r *Relay) observe() error {
	mp := r.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	_, err := mp.Meter("boxoffice.dev/platform/outbox").Int64ObservableGauge("boxoffice.outbox.set_aside",
		metric.WithDescription("Outbox rows the relay set aside as never publishable (failed_at set); they wait to be replayed."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(r.setAside.Load())
			return nil
		}))
	return err
}

// pass publishes up to one batch, setting aside the rows that can never be published, and
// prunes and counts the rows set aside when due. full reports a whole batch was handled, so
// more rows may be pending.
func (r *Relay) pass(ctx context.Context) (full bool, err error) {
	now := r.now()
	if now.Sub(r.pruned) >= pruneEvery {
		if err := r.prune(ctx, now); err != nil {
			return false, err
		}
		if err := r.countSetAside(ctx); err != nil {
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
	record, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var done []any
	var pubErr error
	ensured := false
	for _, row := range rows {
		err := r.publish(ctx, row)
		if err == nil {
			done = append(done, row.seq)
			continue
		}
		if !r.permanent(ctx, row, err, &ensured) {
			pubErr = err
			break
		}
		if pubErr = r.putAside(record, row, err); pubErr != nil {
			break
		}
	}
	if err := r.markPublished(record, done); err != nil {
		return false, errors.Join(pubErr, err)
	}
	return len(rows) == batch && pubErr == nil, pubErr
}

// errUnreadableHeaders marks a row whose stored headers do not parse: no retry mends it.
var errUnreadableHeaders = errors.New("unreadable headers")

// permanent reports whether err, from publishing x, will recur however often the relay
// tries: the payload is over the server's max_payload or the stream's message size, the
// headers do not parse, or no stream stores x's subject. A stream missing altogether may be
// one deleted or not yet created, so the relay ensures it (once a pass, *ensured) before
// deciding; without Ensure it cannot tell and waits.
func (r *Relay) permanent(ctx context.Context, x row, err error, ensured *bool) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, errUnreadableHeaders), errors.Is(err, nats.ErrMaxPayload):
		return true
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum:
		return true
	case !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders):
		return false
	}
	// No stream answered. One may store the subject and be electing a leader; only a lookup
	// that finds none, after ensuring the relay's own stream, is final.
	if r.Ensure == nil || !r.noStreamFor(ctx, x.subject) {
		return false
	}
	if !*ensured {
		if err := r.Ensure(ctx); err != nil {
			r.log.WarnContext(ctx, "outbox relay: ensure stream", "error", err)
			return false
		}
		*ensured = true
	}
	return r.noStreamFor(ctx, x.subject)
}

// noStreamFor reports whether JetStream answered that no stream stores subject.
func (r *Relay) noStreamFor(ctx context.Context, subject string) bool {
	finder, ok := r.JS.(streamFinder)
	if !ok {
		return false
	}
	_, err := finder.StreamNameBySubject(ctx, subject)
	return errors.Is(err, jetstream.ErrStreamNotFound)
}

// putAside records in x's row why it can never be published, so later passes skip it.
func (r *Relay) putAside(ctx context.Context, x row, cause error) error {
	_, err := r.DB.ExecContext(ctx, r.DB.Rebind(`UPDATE outbox SET failed_at = ?, failure = ? WHERE seq = ? AND published_at IS NULL AND failed_at IS NULL`),
		r.now().UnixMilli(), cause.Error(), x.seq)
	if err != nil {
		return fmt.Errorf("set aside %s: %w", x.id, err)
	}
	r.log.ErrorContext(ctx, "outbox relay: event can never be published; set aside, later events go on",
		"id", x.id, "seq", x.seq, "subject", x.subject, "bytes", len(x.payload), "error", cause)
	return r.countSetAside(ctx)
}

// countSetAside refreshes the gauge from the table, which other relays and an operator
// replaying rows change too.
func (r *Relay) countSetAside(ctx context.Context) error {
	var n int64
	if err := r.DB.QueryRowContext(ctx, `SELECT count(*) FROM outbox WHERE failed_at IS NOT NULL AND published_at IS NULL`).Scan(&n); err != nil {
		return fmt.Errorf("count set aside: %w", err)
	}
	r.setAside.Store(n)
	return nil
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
		`SELECT seq, id, subject, payload, headers FROM outbox WHERE published_at IS NULL AND failed_at IS NULL ORDER BY seq LIMIT ?`), limit)
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
		return fmt.Errorf("publish %s: %w: %w", x.id, errUnreadableHeaders, err)
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
