// Package notification is BoxOffice's notification: it turns order and hold events into
// messages for fans (an email's subject and body, a push text) and keeps each fan's inbox.
//
// Events arrive at least once (a redelivery after a lost ack, a relay resending after a
// crash). The effect is made idempotent where it lands: one message per event id, enforced
// by a unique constraint, so a repeat is absorbed and acknowledged without a second message.
//
// This file holds the domain: which events make a message and how it reads. It does no I/O.
package notification

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// Kind is the event type a message was made from.
type Kind string

// The events that make a message. An order's creation makes none: the fan is on the
// checkout screen, and the outcome (confirmed or failed) follows within seconds.
const (
	OrderConfirmed Kind = "order.confirmed"
	OrderFailed    Kind = "order.failed"
	HoldExpired    Kind = "inventory.hold.expired"
)

// Message is one notification in a fan's inbox.
type Message struct {
	ID        string    `json:"id"`
	EventID   string    `json:"event_id"` // the event it was made from; one message per event
	Account   string    `json:"account"`
	Kind      Kind      `json:"kind"`
	Subject   string    `json:"subject"` // the email's subject
	Body      string    `json:"body"`    // the email's text
	Push      string    `json:"push"`    // the one-line push notification
	CreatedAt time.Time `json:"created_at"`
}

// Event is the part of an event's JSON payload a message is made from: the envelope every
// BoxOffice event has (id, type, occurred_at) and the entity it is about.
type Event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	OccurredAt time.Time `json:"occurred_at"`
	Order      *Order    `json:"order,omitempty"`
	Hold       *Hold     `json:"hold,omitempty"`
}

// Order is what a message says about an order (boxoffice.order.order.* payloads).
type Order struct {
	ID            string      `json:"id"`
	Account       string      `json:"account"`
	EventID       string      `json:"event_id"`
	Amount        money.Money `json:"amount"`
	FailureReason string      `json:"failure_reason"`
	Lines         []struct {
		Class    string `json:"class"`
		Quantity int    `json:"quantity"`
	} `json:"lines"`
}

// Hold is what a message says about a hold (boxoffice.inventory.hold.* payloads).
type Hold struct {
	ID        string    `json:"id"`
	EventID   string    `json:"event_id"`
	Account   string    `json:"account"`
	Quantity  int       `json:"quantity"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Decode parses an event payload. A payload that is not JSON or lacks an id is Invalid: it
// will never become readable, so a consumer drops it instead of retrying it forever.
func Decode(payload []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return Event{}, problem.New(problem.Invalid, "event payload: %v", err)
	}
	if ev.ID == "" {
		return Event{}, problem.New(problem.Invalid, "event payload has no id")
	}
	return ev, nil
}

// templates holds, per kind, the subject, body and push text. Each is executed with the
// Event; missing keys are errors so a template cannot silently print "<no value>".
var templates = map[Kind]*template.Template{
	OrderConfirmed: mustTemplates(OrderConfirmed,
		`Your tickets are confirmed (order {{.Order.ID}})`,
		`Hello,

your order {{.Order.ID}} for event {{.Order.EventID}} is confirmed and paid: {{.Order.Amount}}.
{{range .Order.Lines}}
  {{.Quantity}} × {{.Class}}{{end}}

Your tickets are in the app. Enjoy the show!
— BoxOffice`,
		`Confirmed: {{tickets .Order}} for {{.Order.EventID}} ({{.Order.Amount}})`),
	OrderFailed: mustTemplates(OrderFailed,
		`Your order {{.Order.ID}} could not be completed`,
		`Hello,

your order {{.Order.ID}} for event {{.Order.EventID}} could not be completed: {{.Order.FailureReason}}.
Nothing was charged, or the charge was refunded, and the seats went back on sale.

— BoxOffice`,
		`Order not completed: {{.Order.FailureReason}}`),
	HoldExpired: mustTemplates(HoldExpired,
		`Your seats for {{.Hold.EventID}} were released`,
		`Hello,

your hold {{.Hold.ID}} on {{.Hold.Quantity}} ticket(s) for event {{.Hold.EventID}} expired at {{.Hold.ExpiresAt.Format "15:04 MST"}}
before an order was placed, so the seats went back on sale. You can pick seats again while they last.

— BoxOffice`,
		`Your hold for {{.Hold.EventID}} expired`),
}

func mustTemplates(kind Kind, subject, body, push string) *template.Template {
	funcs := template.FuncMap{"tickets": func(o *Order) string {
		n := 0
		for _, l := range o.Lines {
			n += l.Quantity
		}
		if n == 1 {
			return "1 ticket"
		}
		return fmt.Sprintf("%d tickets", n)
	}}
	t := template.New(string(kind)).Funcs(funcs).Option("missingkey=error")
	template.Must(t.New("subject").Parse(subject))
	template.Must(t.New("body").Parse(body))
	template.Must(t.New("push").Parse(push))
	return t
}

// Render makes the message for ev, or reports ok false when ev makes none (an order's
// creation, a hold placed). The message has no ID or CreatedAt yet: the store assigns them.
func Render(ev Event) (m Message, ok bool, err error) {
	kind := Kind(ev.Type)
	t, ok := templates[kind]
	if !ok {
		return Message{}, false, nil
	}
	switch {
	case strings.HasPrefix(ev.Type, "order.") && (ev.Order == nil || ev.Order.Account == ""):
		return Message{}, false, problem.New(problem.Invalid, "event %s: no order or account", ev.ID)
	case strings.HasPrefix(ev.Type, "inventory.hold.") && (ev.Hold == nil || ev.Hold.Account == ""):
		return Message{}, false, problem.New(problem.Invalid, "event %s: no hold or account", ev.ID)
	}
	m = Message{EventID: ev.ID, Kind: kind}
	if ev.Order != nil {
		m.Account = ev.Order.Account
	} else {
		m.Account = ev.Hold.Account
	}
	for name, dst := range map[string]*string{"subject": &m.Subject, "body": &m.Body, "push": &m.Push} {
		var b bytes.Buffer
		if err := t.ExecuteTemplate(&b, name, ev); err != nil {
			return Message{}, false, problem.New(problem.Invalid, "event %s: render %s: %v", ev.ID, name, err)
		}
		*dst = b.String()
	}
	return m, true, nil
}
