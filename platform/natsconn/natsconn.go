// Package natsconn connects BoxOffice processes to NATS: the embedded nats-server the
// all-in-one mode runs in-process, a client connection that rides out server restarts,
// idempotent JetStream stream setup with de-duplication, retention limits and replicas,
// and trace context carried in message headers.
//
// Events travel on JetStream (durable, de-duplicated by Nats-Msg-Id); control messages for
// the playground travel on plain NATS subjects so that every replica receives them.
package natsconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ReconnectWait is the pause between two reconnection attempts. Short enough that a
// restarted server is found again within a second, long enough not to spin.
const ReconnectWait = 250 * time.Millisecond

// FirstConnectWait is how long Connect waits for the first connection before it returns
// one that is still trying. Long enough for a NATS started next to the process (compose,
// boxoffice up) to accept it, short enough that the process listens, and passes its
// startup probe, well before an orchestrator gives up on it.
const FirstConnectWait = 3 * time.Second

// Connect opens a connection named name (shown in the server's connection list) to url. It
// waits up to FirstConnectWait, then returns the connection anyway, still trying, since NATS
// carries events, not requests; afterwards it reconnects forever, so a process outlives a
// NATS restart. While disconnected, publishes are buffered up to the reconnect buffer and
// requests and JetStream calls fail (their callers retry). It errs only on an invalid url or
// ctx ending first. A nil log discards the events. The caller closes the connection.
func Connect(ctx context.Context, url, name string, log *slog.Logger) (*nats.Conn, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("nats", redacted(url), "conn", name)
	connected := make(chan struct{})
	var once sync.Once
	nc, err := nats.Connect(url,
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(ReconnectWait),
		nats.ConnectHandler(func(c *nats.Conn) {
			once.Do(func() { close(connected) })
			log.Info("nats connected", "server", c.ConnectedUrlRedacted())
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
				return
			}
			log.Info("nats disconnected")
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", "server", c.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(*nats.Conn) { log.Info("nats connection closed") }),
	)
	if err != nil {
		return nil, fmt.Errorf("nats connect %s: %w", redacted(url), err)
	}
	if nc.IsConnected() {
		return nc, nil
	}
	wait := time.NewTimer(FirstConnectWait)
	defer wait.Stop()
	select {
	case <-connected:
	case <-wait.C:
		log.Warn("nats not reachable: going on without it, still connecting", "waited", FirstConnectWait.String())
	case <-ctx.Done():
		nc.Close()
		return nil, fmt.Errorf("nats connect %s: %w", redacted(url), errors.Join(ctx.Err(), nc.LastError()))
	}
	return nc, nil
}

// redacted is a NATS URL, or a comma-separated list of them, fit for a log line: a password,
// or a user with none (NATS token auth: nats://TOKEN@host), is replaced by xxxxx, and a URL
// that does not parse is not shown at all.
func redacted(servers string) string {
	parts := strings.Split(servers, ",")
	for i, p := range parts {
		u, err := neturl.Parse(strings.TrimSpace(p))
		if err != nil {
			parts[i] = "(unparsable URL)"
			continue
		}
		if u.User != nil {
			if _, ok := u.User.Password(); !ok {
				u.User = neturl.User("xxxxx")
			}
		}
		parts[i] = u.Redacted()
	}
	return strings.Join(parts, ",")
}
