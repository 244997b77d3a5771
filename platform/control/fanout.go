package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/natsconn"
)

// Subject is the NATS subject that carries service's knobs.
func Subject(service string) string { return "boxoffice.control." + service }

// Subscribe applies knobs published for this Hook's service. It is a plain subscription,
// not a queue group nor a JetStream consumer: every replica must receive every message,
// and a replica that was down simply starts healthy. ctx bounds the round trip that makes
// sure the server has registered the subscription; the subscription itself lasts until
// stop is called. Invalid messages are logged and ignored.
func (h *Hook) Subscribe(ctx context.Context, nc *nats.Conn) (stop func(), err error) {
	sub, err := nc.Subscribe(Subject(h.service), func(m *nats.Msg) {
		ctx := natsconn.ExtractTrace(context.Background(), m.Header)
		var k Knobs
		if err := json.Unmarshal(m.Data, &k); err != nil {
			h.log.WarnContext(ctx, "control message is not valid JSON", "error", err)
			return
		}
		if err := h.Set(k); err != nil {
			h.log.WarnContext(ctx, "control message rejected", "error", err)
			return
		}
		h.log.InfoContext(ctx, "control knobs set over nats", "knobs", k.wire())
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", Subject(h.service), err)
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: %w", Subject(h.service), err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Publish sends k to every replica of service, and returns once the server has it. k is
// validated first, so a bad knob fails here rather than in every replica's log.
func Publish(ctx context.Context, nc *nats.Conn, service string, k Knobs) error {
	if err := k.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(k)
	if err != nil {
		return fmt.Errorf("publish control: %w", err)
	}
	msg := &nats.Msg{Subject: Subject(service), Data: b, Header: nats.Header{}}
	natsconn.InjectTrace(ctx, msg.Header)
	if err := nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("publish %s: %w", msg.Subject, err)
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("publish %s: %w", msg.Subject, err)
	}
	return nil
}
