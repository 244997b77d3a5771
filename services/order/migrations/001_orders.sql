-- An order per hold: a second order for a hold already ordered is refused by hold_id's
-- unique constraint, whatever its idempotency key.
CREATE TABLE orders (
    id             TEXT PRIMARY KEY,
    account        TEXT NOT NULL,
    hold_id        TEXT NOT NULL UNIQUE,
    event_id       TEXT NOT NULL,
    lines          TEXT NOT NULL, -- JSON: [{class, quantity, unit_price}]
    currency       TEXT NOT NULL,
    amount_minor   BIGINT NOT NULL,
    state          TEXT NOT NULL,
    failure_reason TEXT NOT NULL DEFAULT '',
    charge_id      TEXT NOT NULL DEFAULT '',
    attempts       INTEGER NOT NULL DEFAULT 0,
    version        INTEGER NOT NULL,  -- compare-and-set: every write bumps it
    created_us     BIGINT NOT NULL,   -- unix microseconds: orders the same on both engines
    updated_us     BIGINT NOT NULL
);

CREATE INDEX orders_by_account ON orders (account, created_us, id);
CREATE INDEX orders_by_state ON orders (state, updated_us);

-- The idempotency record of POST /v1/orders, written in the order's transaction. Keys are
-- per account: two fans choosing the same key never see each other's order.
CREATE TABLE order_idempotency (
    account         TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    order_id        TEXT NOT NULL,
    created_us      BIGINT NOT NULL,
    PRIMARY KEY (account, idempotency_key)
);
