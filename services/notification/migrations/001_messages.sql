-- One message per event: the unique event_id is what makes at-least-once delivery safe.
CREATE TABLE messages (
    id         TEXT PRIMARY KEY,
    event_id   TEXT NOT NULL UNIQUE,
    account    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    push       TEXT NOT NULL,
    created_us BIGINT NOT NULL -- unix microseconds: orders the same on both engines
);

CREATE INDEX messages_by_account ON messages (account, created_us, id);
