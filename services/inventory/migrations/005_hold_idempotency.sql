-- The idempotency record of a placed hold, written in the hold's transaction: the same
-- account and key find the hold the first request placed instead of placing a second. Keys
-- are per account, so two fans choosing the same key never see each other's hold. A record
-- lives as long as its hold's row (holds are never deleted): a retry after the hold was
-- released or expired gets that ended hold back, never a fresh one under the old key.
CREATE TABLE hold_idempotency (
    account         TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    hold_id         TEXT NOT NULL,
    created_ms      BIGINT NOT NULL,
    PRIMARY KEY (account, idempotency_key)
);
