-- Times are unix milliseconds in BIGINT columns, as in the outbox: integers compare and sort
-- the same way on SQLite and PostgreSQL. Secrets (refresh tokens, API keys) are stored only
-- as their SHA-256 in hex; see HashSecret for why a fast hash is right for them.

CREATE TABLE users (
	id            TEXT   PRIMARY KEY,
	email         TEXT   NOT NULL UNIQUE, -- normalised: trimmed, lower-case
	name          TEXT   NOT NULL,
	password_hash TEXT   NOT NULL,        -- bcrypt, salt included
	created_at    BIGINT NOT NULL
);

-- A refresh family is one login: every refresh token rotated from it shares the family, so
-- reuse of any spent token revokes them all at once.
CREATE TABLE refresh_families (
	id            TEXT   PRIMARY KEY,
	user_id       TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at    BIGINT NOT NULL,
	revoked_at    BIGINT,
	revoke_reason TEXT
);
CREATE INDEX refresh_families_user ON refresh_families (user_id);

CREATE TABLE refresh_tokens (
	token_hash TEXT   PRIMARY KEY,
	family_id  TEXT   NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
	issued_at  BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	used_at    BIGINT -- set when rotated; a second use is reuse
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_expiry ON refresh_tokens (expires_at);

CREATE TABLE tenants (
	id         TEXT   PRIMARY KEY,
	name       TEXT   NOT NULL UNIQUE,
	plan       TEXT   NOT NULL CHECK (plan IN ('free', 'partner', 'internal')),
	created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
	key_hash   TEXT   PRIMARY KEY,
	tenant_id  TEXT   NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	created_at BIGINT NOT NULL
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

-- The database is the source of truth for which key signs: every instance derives the
-- states from these instants (see SigningKey). generation is unique, so when two instances
-- add the next key at once one insert wins and the other reads the winner's key.
CREATE TABLE signing_keys (
	id           TEXT   PRIMARY KEY,
	generation   BIGINT NOT NULL UNIQUE,
	private_key  TEXT   NOT NULL, -- Ed25519 seed, base64; not encrypted at rest (out of scope)
	created_at   BIGINT NOT NULL,
	activates_at BIGINT NOT NULL
);
