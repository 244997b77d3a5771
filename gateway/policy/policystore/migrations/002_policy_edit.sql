-- The admin API's edits, layered by every gateway replica over its policy file: read at
-- start, every 30 s and at once on a NATS gateway.policy.changed event, so an edit made on
-- one replica reaches all of them and outlives a restart. A row puts a limit, a route or a
-- service (body: its JSON as the admin API set it), or, deleted, takes a limit off the policy.
-- DELETE /admin/edits empties the table: back to the file. updated_at is unix milliseconds.
CREATE TABLE policy_edit (
	kind       TEXT    NOT NULL CHECK (kind IN ('limit', 'route', 'service')),
	id         TEXT    NOT NULL,
	body       TEXT,
	deleted    BOOLEAN NOT NULL DEFAULT FALSE,
	updated_at BIGINT  NOT NULL DEFAULT 0,
	PRIMARY KEY (kind, id),
	CHECK ((deleted AND kind = 'limit' AND body IS NULL) OR (NOT deleted AND body IS NOT NULL))
);
