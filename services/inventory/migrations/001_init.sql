-- Inventory's schema, the same on SQLite and PostgreSQL.
-- Times are BIGINT milliseconds since the Unix epoch: both engines compare them exactly,
-- where SQLite would compare TIMESTAMP text lexically.

-- An event inventory knows, i.e. one with a seat map.
CREATE TABLE events (
	event_id   TEXT PRIMARY KEY,
	flash_sale BOOLEAN NOT NULL, -- holds need a waitroom admission pass
	updated_ms BIGINT NOT NULL
);

-- One row per numbered seat. A seat is held or sold by exactly one hold.
CREATE TABLE seats (
	event_id    TEXT NOT NULL REFERENCES events (event_id),
	seat_id     TEXT NOT NULL, -- "A-3-12"
	section     TEXT NOT NULL,
	section_pos INTEGER NOT NULL, -- the section's place in the layout, for venue order
	row_num     INTEGER NOT NULL,
	number      INTEGER NOT NULL,
	class_id    TEXT NOT NULL,
	status      TEXT NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'held', 'sold')),
	hold_id     TEXT,
	PRIMARY KEY (event_id, seat_id),
	CHECK ((status = 'available') = (hold_id IS NULL))
);
CREATE INDEX seats_by_hold ON seats (hold_id);

-- General-admission classes: counters, no seats. The CHECK is the database's own refusal to
-- oversell, behind the conditional UPDATE that claims tickets.
CREATE TABLE ga_classes (
	event_id TEXT NOT NULL REFERENCES events (event_id),
	class_id TEXT NOT NULL,
	capacity INTEGER NOT NULL CHECK (capacity > 0),
	held     INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
	sold     INTEGER NOT NULL DEFAULT 0 CHECK (sold >= 0),
	PRIMARY KEY (event_id, class_id),
	CHECK (held + sold <= capacity)
);

CREATE TABLE holds (
	id         TEXT PRIMARY KEY,
	event_id   TEXT NOT NULL,
	account    TEXT NOT NULL,
	status     TEXT NOT NULL CHECK (status IN ('active', 'confirmed', 'released', 'expired')),
	class_id   TEXT NOT NULL DEFAULT '', -- GA holds only
	quantity   INTEGER NOT NULL CHECK (quantity > 0),
	created_ms BIGINT NOT NULL,
	expires_ms BIGINT NOT NULL,
	updated_ms BIGINT NOT NULL
);
CREATE INDEX holds_by_account ON holds (account, created_ms, id);
CREATE INDEX holds_by_due ON holds (status, expires_ms);

-- The seats a seated hold took, kept after the hold ends (seats.hold_id is cleared on release).
CREATE TABLE hold_seats (
	hold_id  TEXT NOT NULL REFERENCES holds (id),
	seat_id  TEXT NOT NULL,
	class_id TEXT NOT NULL,
	PRIMARY KEY (hold_id, seat_id)
);
