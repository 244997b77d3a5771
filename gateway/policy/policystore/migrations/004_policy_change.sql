-- The audit trail of the policy: one row per change, whatever made it (an admin edit, a
-- per-tenant override, a reset of the edits, a replica's reload of its policy file), written
-- by the replica that made it, in the same transaction as the change where the change is a
-- write to these tables. before_json and after_json are the element as it ran, as JSON (NULL:
-- it did not exist), so a field added to a rule appears without a migration. at_us is unix
-- microseconds of the store's clock; id (chg_…) orders rows of the same microsecond.
CREATE TABLE policy_change (
	id          TEXT   NOT NULL PRIMARY KEY,
	at_us       BIGINT NOT NULL,
	actor       TEXT   NOT NULL,
	replica     TEXT   NOT NULL,
	kind        TEXT   NOT NULL,
	element     TEXT   NOT NULL,
	action      TEXT   NOT NULL,
	before_json TEXT,
	after_json  TEXT
);

-- GET /admin/audit reads newest first, all of it or one element's changes.
CREATE INDEX policy_change_newest ON policy_change (at_us DESC, id DESC);
CREATE INDEX policy_change_element ON policy_change (kind, element, at_us DESC, id DESC);
