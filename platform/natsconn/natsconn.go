// Package natsconn connects BoxOffice processes to NATS: the embedded nats-server the
// all-in-one mode runs in-process, a client connection that rides out server restarts,
// idempotent JetStream stream setup with de-duplication, and trace context carried in
// message headers.
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
	"time"

	"github.com/nats-io/nats.go"
)

// ReconnectWait is the pause between two reconnection attempts. Short enough that a
// restarted server is found again within a second, long enough not to spin.
const ReconnectWait = 250 * time.Millisecond

// Connect opens a connection named name (the name shows in the server's connection list)
// to the server at url. It retries until the first connection succeeds or ctx ends, and
// afterwards reconnects forever, logging each disconnect and reconnect: a process outlives
// a NATS restart instead of exiting. Messages published while disconnected are buffered by
// the client up to its reconnect buffer.
//
// A nil log discards the connection events. The caller closes the connection (Drain or Close).
func Connect(ctx context.Context, url, name string, log *slog.Logger) (*nats.Conn, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("nats", url, "conn", name)
	connected := make(chan struct{}, 1)
	nc, err := nats.Connect(url,
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(ReconnectWait),
		nats.ConnectHandler(func(*nats.Conn) {
			select {
			case connected <- struct{}{}:
			default:
			}
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
				return
			}
			log.Info("nats disconnected")
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", "server", c.ConnectedUrl())
		}),
		nats.ClosedHandler(func(*nats.Conn) { log.Info("nats connection closed") }),
	)
	if err != nil {
		return nil, fmt.Errorf("nats connect %s: %w", url, err)
	}
	if nc.IsConnected() {
		return nc, nil
	}
	select {
	case <-connected:
		return nc, nil
	case <-ctx.Done():
		nc.Close()
		return nil, fmt.Errorf("nats connect %s: %w", url, errors.Join(ctx.Err(), nc.LastError()))
	}
}
