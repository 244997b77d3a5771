-- Venues and events. Times are unix milliseconds (BIGINT): SQLite has no timestamp type, and
-- integers compare and sort the same way on both dialects. Lists a row is read with whole
-- (sections, performers, tags, ticket classes) are JSON text; the *_key columns hold the
-- folded text filters match on (lower case, no accents), written by the service.
CREATE TABLE venues (
	id         TEXT    PRIMARY KEY,
	name       TEXT    NOT NULL,
	city       TEXT    NOT NULL,
	city_key   TEXT    NOT NULL,
	country    TEXT    NOT NULL,
	address    TEXT    NOT NULL,
	capacity   INTEGER NOT NULL,
	sections   TEXT    NOT NULL,
	created_at BIGINT  NOT NULL
);

CREATE TABLE events (
	id             TEXT    PRIMARY KEY,
	title          TEXT    NOT NULL,
	title_key      TEXT    NOT NULL,
	description    TEXT    NOT NULL,
	performers     TEXT    NOT NULL,
	performers_key TEXT    NOT NULL, -- '|name one|name two|'
	venue_id       TEXT    NOT NULL REFERENCES venues (id),
	city           TEXT    NOT NULL,
	city_key       TEXT    NOT NULL,
	country        TEXT    NOT NULL,
	starts_at      BIGINT  NOT NULL,
	on_sale_at     BIGINT  NOT NULL,
	flash_sale     BOOLEAN NOT NULL,
	image_url      TEXT    NOT NULL,
	ticket_classes TEXT    NOT NULL,
	min_price      BIGINT  NOT NULL, -- the cheapest class, minor units
	tags           TEXT    NOT NULL,
	tags_key       TEXT    NOT NULL, -- '|rock|live|'
	version        BIGINT  NOT NULL,
	created_at     BIGINT  NOT NULL,
	updated_at     BIGINT  NOT NULL
);

-- Lists are ordered by (starts_at, id) and paged by keyset on it; the city filter is the
-- commonest.
CREATE INDEX events_by_start ON events (starts_at, id);
CREATE INDEX events_by_city ON events (city_key, starts_at, id);
CREATE INDEX events_by_venue ON events (venue_id);
