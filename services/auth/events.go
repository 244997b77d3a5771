package auth

import (
	"encoding/json"
	"fmt"
	"time"

	"boxoffice.dev/platform/outbox"
)

// The auth service's events: one stream, subjects boxoffice.auth.<entity>.<verb>; the type
// in the payload is the subject without the "boxoffice." prefix.
const (
	Stream         = "AUTH"
	StreamSubjects = "boxoffice.auth.>"

	typeUserRegistered = "auth.user.registered"
)

// UserRegistered is the payload of boxoffice.auth.user.registered: a new account, for
// services that greet or index users. It carries no secret.
type UserRegistered struct {
	ID         string    `json:"id"` // the event id, also its Nats-Msg-Id
	Type       string    `json:"type"`
	OccurredAt time.Time `json:"occurred_at"`
	UserID     string    `json:"user_id"`
	Email      string    `json:"email"`
	Name       string    `json:"name"`
}

// userRegistered returns the outbox event announcing u, with id as its id.
func userRegistered(id string, u User) (*outbox.Event, error) {
	body, err := json.Marshal(UserRegistered{ID: id, Type: typeUserRegistered, OccurredAt: u.CreatedAt,
		UserID: u.ID, Email: u.Email, Name: u.Name})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", typeUserRegistered, err)
	}
	return &outbox.Event{ID: id, Subject: "boxoffice." + typeUserRegistered, Payload: body, Time: u.CreatedAt}, nil
}
