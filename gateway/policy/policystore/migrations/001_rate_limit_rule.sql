-- Per-tenant rate overrides, read by every gateway replica every 30 s and at once on a NATS
-- ratelimit.rules.changed event. A row replaces the tenant's plan api rate on one route, or
-- on every route when route is '*', by a token bucket of capacity tokens refilled at
-- refill_per_second. updated_at is unix milliseconds, as elsewhere in BoxOffice: integers
-- compare the same way on SQLite and PostgreSQL.
CREATE TABLE rate_limit_rule (
	tenant            TEXT             NOT NULL,
	route             TEXT             NOT NULL DEFAULT '*',
	capacity          INTEGER          NOT NULL CHECK (capacity >= 1),
	refill_per_second DOUBLE PRECISION NOT NULL CHECK (refill_per_second > 0),
	updated_at        BIGINT           NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, route)
);
