package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/sqldb"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// The catalog's events. Subjects are boxoffice.catalog.<entity>.<verb>; the type in the
// payload is the same without the prefix.
const (
	Stream         = catalogv1.Stream
	StreamSubjects = catalogv1.StreamSubjects

	eventCreated = "catalog.event.created"
	eventUpdated = "catalog.event.updated"
	venueCreated = "catalog.venue.created"
)

// protoJSON writes payloads with the proto field names (snake_case, like the REST API).
var protoJSON = protojson.MarshalOptions{UseProtoNames: true}

// emitEvent adds the change of e to the outbox within tx; nothing when events are off. The change id is the event id and
// version, so the same change written twice is one message in the stream.
func (s *Store) emitEvent(ctx context.Context, tx *sql.Tx, typ string, e Event) error {
	if !s.Emit {
		return nil
	}
	id := fmt.Sprintf("%s@v%d", e.ID, e.Version)
	return emit(ctx, tx, s.DB, id, typ, e.UpdatedAt, &catalogv1.EventChange{
		Id: id, Type: typ, OccurredAt: timestamppb.New(e.UpdatedAt), Event: eventProto(e),
	})
}

// emitVenue adds the creation of v to the outbox within tx; nothing when events are off.
func (s *Store) emitVenue(ctx context.Context, tx *sql.Tx, v Venue, at time.Time) error {
	if !s.Emit {
		return nil
	}
	id := v.ID + "@created"
	return emit(ctx, tx, s.DB, id, venueCreated, at, &catalogv1.VenueChange{
		Id: id, Type: venueCreated, OccurredAt: timestamppb.New(at), Venue: venueProto(v),
	})
}

func emit(ctx context.Context, tx *sql.Tx, db *sqldb.DB, id, typ string, at time.Time, payload proto.Message) error {
	body, err := protoJSON.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s: %w", typ, err)
	}
	return outbox.Add(ctx, tx, db, outbox.Event{ID: id, Subject: "boxoffice." + typ, Payload: body, Time: at})
}
