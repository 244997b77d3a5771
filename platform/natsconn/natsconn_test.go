package natsconn_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

// A process must start, and listen, with NATS away: Connect gives up waiting after
// FirstConnectWait, says so, and the connection it returns delivers what was subscribed
// meanwhile once NATS is there.
func TestConnectWithNATSDownReturnsAndConnectsLater(t *testing.T) {
	port := testkit.FreePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	var logs testkit.Buffer
	start := time.Now()
	nc, err := natsconn.Connect(context.Background(), url, "late", slog.New(slog.NewTextHandler(&logs, nil)))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Connect(%s) with no server = %v, want a connection still trying", url, err)
	}
	defer nc.Close()
	if took > natsconn.FirstConnectWait+2*time.Second {
		t.Errorf("Connect with no server took %v, want about FirstConnectWait (%v)", took, natsconn.FirstConnectWait)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, url) {
		t.Errorf("Connect with no server logged %q, want a warning naming %s", l, url)
	}
	got := make(chan string, 1)
	if _, err := nc.Subscribe("boxoffice.test.late", func(m *nats.Msg) { got <- string(m.Data) }); err != nil {
		t.Fatalf("Subscribe while disconnected: %v", err)
	}

	srv, err := natsconn.StartEmbedded(natsconn.EmbeddedOptions{StoreDir: t.TempDir(), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	testkit.Eventually(t, 10*time.Second, "the connection is up", nc.IsConnected)
	pub, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	// The subscription reaches the server on connect, possibly just after IsConnected turns
	// true: publish until one arrives.
	testkit.Eventually(t, 5*time.Second, "a message on the subscription made while disconnected", func() bool {
		if err := pub.Publish("boxoffice.test.late", []byte("hello")); err != nil {
			return false
		}
		select {
		case m := <-got:
			return m == "hello"
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
}
