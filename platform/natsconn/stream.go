package natsconn

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id. A publisher retrying
// after a lost acknowledgement, or an outbox relay re-sending after a crash, within this
// window stores the event once. Longer windows cost server memory per message id.
const DuplicateWindow = 2 * time.Minute

// EnsureStream creates the stream name over subjects, or updates it to that configuration
// if it exists, so every replica of a service can call it at start. Messages are kept on
// file storage with a DuplicateWindow de-duplication window.
func EnsureStream(ctx context.Context, js jetstream.JetStream, name string, subjects []string) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       name,
		Subjects:   subjects,
		Storage:    jetstream.FileStorage,
		Duplicates: DuplicateWindow,
	})
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", name, err)
	}
	return s, nil
}
