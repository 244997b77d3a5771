package natsconn

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id. A publisher retrying
// after a lost acknowledgement, or an outbox relay re-sending after a crash, within this
// window stores the event once. Longer windows cost server memory per message id.
const DuplicateWindow = 2 * time.Minute

// StreamMaxAge is how long a stream keeps an event unless StreamOptions say otherwise.
// Durable consumers resume where they stopped, so a consumer down for less than this misses
// nothing; one down for longer, or a consumer created later that starts at the stream's
// first event, misses what aged out. Without a limit a stream keeps every event forever,
// until the server's store is full and JetStream refuses every publish of every service.
const StreamMaxAge = 7 * 24 * time.Hour

// StreamMaxBytes caps a stream's size unless StreamOptions say otherwise; past it the oldest
// events are dropped, so a burst of events (a load test) ages the stream faster than
// StreamMaxAge. JetStream reserves this much of the server's store for each stream when it
// is created, and refuses a stream that does not fit: four streams of 128 MiB fit the 1 GB
// stores of compose and the local Kubernetes overlay with room to spare.
const StreamMaxBytes = 128 << 20

// StreamOptions tune EnsureStreamWith. The zero value means one replica and the limits
// StreamMaxAge and StreamMaxBytes.
type StreamOptions struct {
	// Replicas is how many NATS servers of a cluster keep a copy of the stream; 0 means 1.
	// With 3, the stream survives the loss of one server (a rolling restart) and keeps
	// accepting events. A server that is not part of a cluster refuses more than 1.
	Replicas int
	// MaxAge is how long an event is kept; 0 means StreamMaxAge.
	MaxAge time.Duration
	// MaxBytes caps the stream's size, the oldest events going first; 0 means StreamMaxBytes.
	MaxBytes int64
}

// EnsureStream is EnsureStreamWith with the zero StreamOptions: one replica, the default
// limits.
func EnsureStream(ctx context.Context, js jetstream.JetStream, name string, subjects []string) (jetstream.Stream, error) {
	return EnsureStreamWith(ctx, js, name, subjects, StreamOptions{})
}

// EnsureStreamWith creates the stream name over subjects, or updates it to that
// configuration if it exists, so every replica of a service can call it at start. Messages
// are kept on file storage with a DuplicateWindow de-duplication window, within the limits
// and on the replicas o gives; the oldest are discarded past a limit. Updating applies new
// limits and replicas to a stream an older build created (JetStream trims it at once to
// the new limits, and moves a cluster's copies to the new replica count).
func EnsureStreamWith(ctx context.Context, js jetstream.JetStream, name string, subjects []string, o StreamOptions) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       name,
		Subjects:   subjects,
		Storage:    jetstream.FileStorage,
		Duplicates: DuplicateWindow,
		Replicas:   cmp.Or(o.Replicas, 1),
		MaxAge:     cmp.Or(o.MaxAge, StreamMaxAge),
		MaxBytes:   cmp.Or(o.MaxBytes, StreamMaxBytes),
		// Keep accepting events, losing the oldest: refusing new ones would stall every relay
		// publishing to the stream, and with them the events of other subjects behind.
		Discard: jetstream.DiscardOld,
	})
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", name, err)
	}
	return s, nil
}
