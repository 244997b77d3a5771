package order

import (
	"encoding/json"
	"time"

	"boxoffice.dev/platform/outbox"
)

// Stream is the JetStream stream order's events go to, over the subjects in Subjects.
const Stream = "ORDER"

// Subjects are the subjects of Stream: boxoffice.order.<entity>.<verb>.
var Subjects = []string{"boxoffice.order.>"}

// Verb is what happened to an order: the last token of its event's subject.
type Verb string

// The events an order emits: boxoffice.order.order.created when it is placed, then exactly
// one of confirmed or failed when its saga ends.
const (
	Created        Verb = "created"
	EventConfirmed      = Verb(Confirmed)
	EventFailed         = Verb(Failed)
)

// Subject is the subject of an order event.
func (v Verb) Subject() string { return "boxoffice.order.order." + string(v) }

// Event is the JSON payload of an order event. Its ID is also the message's Nats-Msg-Id, so
// the stream and the consumers de-duplicate by it.
type Event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"` // "order.created", "order.confirmed", "order.failed"
	OccurredAt time.Time `json:"occurred_at"`
	Order      Order     `json:"order"`
}

// orderEvent is the outbox event for v happening to o. Its id is derived from the order and
// the verb, not drawn at random: an order is created, confirmed or failed once, so the id
// names that fact, and any repeat of it carries the same id.
func orderEvent(o Order, v Verb) outbox.Event {
	ev := Event{ID: o.ID + "." + string(v), Type: "order." + string(v), OccurredAt: o.UpdatedAt, Order: o}
	payload, _ := json.Marshal(ev) // cannot fail: plain strings, numbers and times
	return outbox.Event{ID: ev.ID, Subject: v.Subject(), Payload: payload, Time: o.UpdatedAt}
}
