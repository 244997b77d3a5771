-- One row per idempotency key: the unique constraint is what makes a retried or concurrent
-- Charge find the first one instead of taking money twice.
CREATE TABLE charges (
    id              TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    order_id        TEXT NOT NULL,
    account         TEXT NOT NULL,
    currency        TEXT NOT NULL,
    amount_minor    BIGINT NOT NULL,
    status          TEXT NOT NULL,
    decline_reason  TEXT NOT NULL DEFAULT '',
    created_us      BIGINT NOT NULL, -- unix microseconds: orders the same on both engines
    updated_us      BIGINT NOT NULL
);

CREATE INDEX charges_by_order ON charges (order_id, created_us, id);
CREATE INDEX charges_by_time ON charges (created_us, id);
