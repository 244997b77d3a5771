package testkit

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

// JetStream connects to the NATS server at url and returns its JetStream, for a test to
// publish, read a stream or consume as another service would. The connection closes when
// the test ends.
func JetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to nats %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return js
}
