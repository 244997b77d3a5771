package natsconn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

func TestStartEmbeddedNeedsStoreDir(t *testing.T) {
	_, err := natsconn.StartEmbedded(natsconn.EmbeddedOptions{Port: -1})
	if err == nil || !strings.Contains(err.Error(), "store dir") {
		t.Fatalf("StartEmbedded(no store dir) error = %v, want one naming the store dir", err)
	}
}

func TestJetStreamDeduplicatesByMsgID(t *testing.T) {
	srv := testkit.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := natsconn.Connect(ctx, srv.ClientURL(), "dedup-test", nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	// Twice: every replica of a service ensures its stream at start.
	for range 2 {
		if _, err := natsconn.EnsureStream(ctx, js, "ORDERS", []string{"boxoffice.order.>"}); err != nil {
			t.Fatalf("EnsureStream: %v", err)
		}
	}

	publishes := []struct {
		id        string
		duplicate bool
	}{
		{id: "order-1-confirmed", duplicate: false},
		{id: "order-1-confirmed", duplicate: true},
		{id: "order-2-confirmed", duplicate: false},
	}
	for _, p := range publishes {
		ack, err := js.Publish(ctx, "boxoffice.order.order.confirmed", []byte(p.id), jetstream.WithMsgID(p.id))
		if err != nil {
			t.Fatalf("Publish(%s): %v", p.id, err)
		}
		if ack.Duplicate != p.duplicate {
			t.Errorf("Publish(%s) duplicate = %v, want %v", p.id, ack.Duplicate, p.duplicate)
		}
	}
	s, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if got, want := info.State.Msgs, uint64(2); got != want {
		t.Errorf("stored messages = %d, want %d", got, want)
	}
	if got, want := info.Config.Duplicates, natsconn.DuplicateWindow; got != want {
		t.Errorf("duplicate window = %v, want %v", got, want)
	}
}

func TestConnectWaitsForServer(t *testing.T) {
	port := testkit.FreePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)

	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	go func() {
		nc, err := natsconn.Connect(ctx, url, "late-server", nil)
		done <- result{nc, err}
	}()

	// The server starts after the client began dialling, as in a compose start-up race.
	srv, err := natsconn.StartEmbedded(natsconn.EmbeddedOptions{StoreDir: t.TempDir(), Port: port})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	defer srv.Shutdown()
	r := <-done
	if r.err != nil {
		t.Fatalf("Connect before server start: %v", r.err)
	}
	defer r.nc.Close()
	if !r.nc.IsConnected() {
		t.Errorf("Connect returned a connection in state %v, want connected", r.nc.Status())
	}
}

// Connect with NATS away still ends when ctx does before FirstConnectWait: a process
// stopped while starting exits.
func TestConnectGivesUpWithContext(t *testing.T) {
	url := "nats://127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	nc, err := natsconn.Connect(ctx, url, "no-server", nil)
	if err == nil {
		nc.Close()
		t.Fatalf("Connect(%s) with no server succeeded, want an error", url)
	}
}
