package inventory

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/outbox"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// Stream is the JetStream stream inventory's events are published on, and StreamSubjects
// what it holds.
const (
	Stream         = "INVENTORY"
	StreamSubjects = "boxoffice.inventory.>"
)

// The verbs of hold events; the subject is SubjectPrefix + verb, the payload a
// inventoryv1.HoldChange as protojson with proto field names.
const (
	SubjectPrefix = "boxoffice.inventory.hold."

	verbPlaced    = "placed"
	verbReleased  = "released"
	verbExpired   = "expired"
	verbConfirmed = "confirmed"
)

// payloadJSON writes proto field names (event_id, not eventId), like the REST API.
var payloadJSON = protojson.MarshalOptions{UseProtoNames: true}

// record adds the event announcing h's change to the outbox inside tx. The event id is
// "<hold id>@<verb>": each verb happens at most once to a hold, so the id is unique without
// randomness, and a transaction retried after a lost commit cannot announce twice.
func (s *Store) record(ctx context.Context, tx *sql.Tx, verb string, h Hold, at time.Time) error {
	id := h.ID + "@" + verb
	body, err := payloadJSON.Marshal(&inventoryv1.HoldChange{
		Id:         id,
		Type:       "inventory.hold." + verb,
		OccurredAt: timestamppb.New(at),
		Hold:       holdToProto(h),
	})
	if err != nil {
		return fmt.Errorf("encode %s: %w", id, err)
	}
	return outbox.Add(ctx, tx, s.DB, outbox.Event{ID: id, Subject: SubjectPrefix + verb, Payload: body, Time: at})
}
