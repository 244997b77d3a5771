package testkit

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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

// StartNATSServer starts a nats-server in-process with JetStream on a free loopback port, its
// store in a temporary directory, after change (if any) adjusts its options: for a test of
// what the embedded defaults cannot show (a small store, a small max_payload, a cluster). It
// shuts the server down when the test ends.
func StartNATSServer(t testing.TB, change func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	if change != nil {
		change(o)
	}
	srv, err := server.NewServer(o)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready within 10s")
	}
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
