package testkit

import (
	"testing"

	"boxoffice.dev/platform/natsconn"
)

// StartNATS starts the real nats-server in-process with JetStream, its store in a temporary
// directory, on a random loopback port, and shuts it down when the test ends.
func StartNATS(t testing.TB) *natsconn.Embedded {
	t.Helper()
	srv, err := natsconn.StartEmbedded(natsconn.EmbeddedOptions{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}
