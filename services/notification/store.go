package notification

import (
	"context"
	"fmt"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/sqldb/keyset"
)

// Store keeps the inbox in SQLite or PostgreSQL. It is safe for concurrent use, and several
// instances may share a database: the unique event id is the only guard they need.
//
// Make one as a literal, &Store{DB: db}, and set what else you need: every other field's
// zero value is its default.
type Store struct {
	// DB holds the schema of Migrations. Required.
	DB *sqldb.DB
	// Clock stamps messages; the zero Clock is time.Now.
	Clock clock.Clock
	// IDs makes message ids; nil means ids.New.
	IDs ids.Func
}

// Add stores m unless a message for its event exists, and reports whether it did. A repeat
// of an event is therefore harmless: it adds nothing and the caller acknowledges it.
func (s *Store) Add(ctx context.Context, m Message) (Message, bool, error) {
	m.ID, m.CreatedAt = s.IDs.New("msg_"), s.Clock.Now().UTC()
	res, err := s.DB.ExecContext(ctx, s.DB.Rebind(`INSERT INTO messages (id, event_id, account, kind, subject, body, push, created_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`),
		m.ID, m.EventID, m.Account, m.Kind, m.Subject, m.Body, m.Push, m.CreatedAt.UnixMicro())
	if err != nil {
		return Message{}, false, fmt.Errorf("add message for %s: %w", m.EventID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Message{}, false, fmt.Errorf("add message for %s: %w", m.EventID, err)
	}
	return m, n == 1, nil
}

// Page is one page of an inbox; Next is the cursor of the following page, "" on the last.
type Page struct {
	Messages []Message `json:"notifications"`
	Next     string    `json:"next_cursor,omitempty"`
}

// newestFirst is the list List pages through.
var newestFirst = keyset.List[Message]{
	Select: `SELECT id, event_id, account, kind, subject, body, push, created_us FROM messages`,
	Order:  keyset.Order{Key: "created_us", Desc: true},
	Scan:   scanMessage,
	Cursor: func(m Message) keyset.Cursor { return keyset.Cursor{Key: m.CreatedAt.UnixMicro(), ID: m.ID} },
}

// List returns account's messages newest first, limit at a time (0 = DefaultPageSize, at most
// MaxPageSize), from cursor ("" = the newest).
func (s *Store) List(ctx context.Context, account string, limit int, cursor string) (Page, error) {
	messages, next, err := newestFirst.Page(ctx, s.DB, limit, cursor, "account = ?", account)
	if err != nil {
		return Page{}, fmt.Errorf("list messages: %w", err)
	}
	return Page{Messages: messages, Next: next}, nil
}

func scanMessage(r sqldb.Scanner) (Message, error) {
	var m Message
	var created int64
	err := r.Scan(&m.ID, &m.EventID, &m.Account, &m.Kind, &m.Subject, &m.Body, &m.Push, &created)
	m.CreatedAt = time.UnixMicro(created).UTC()
	return m, err
}
