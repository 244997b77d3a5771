package auth

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
)

// Store keeps users, sessions, tenants and signing keys in SQLite or PostgreSQL, with the
// same SQL for both. It is safe for concurrent use; every method that changes more than one
// row does so in one transaction.
//
// Make one as a literal, &Store{DB: db}.
type Store struct {
	// DB holds the schema of Migrations. Required.
	DB *sqldb.DB
}

var (
	errNoUser   = problem.New(problem.NotFound, "no such user")
	errNoTenant = problem.New(problem.NotFound, "no tenant has this api key")
)

// CreateUser adds u with its password hash and, in the same transaction, ev to the outbox
// (nil = no event). An email already registered is a Conflict.
func (s *Store) CreateUser(ctx context.Context, u User, passwordHash string, ev *outbox.Event) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO users (id, email, name, password_hash, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (email) DO NOTHING`),
			u.ID, u.Email, u.Name, passwordHash, millis(u.CreatedAt))
		if err != nil {
			return fmt.Errorf("insert user: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("insert user: %w", err)
		} else if n == 0 {
			return &problem.Error{Code: problem.Conflict, Field: "email", Message: "is already registered"}
		}
		if ev != nil {
			return outbox.Add(ctx, tx, s.DB, *ev)
		}
		return nil
	})
}

// UserByEmail returns the user with the normalised email and its password hash, or a
// NotFound problem.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, string, error) {
	var u User
	var hash string
	var created int64
	err := s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT id, email, name, password_hash, created_at FROM users WHERE email = ?`), email).
		Scan(&u.ID, &u.Email, &u.Name, &hash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, "", errNoUser
	}
	if err != nil {
		return User{}, "", fmt.Errorf("user by email: %w", err)
	}
	u.CreatedAt = fromMillis(created)
	return u, hash, nil
}

// UserByID returns the user with id, or a NotFound problem.
func (s *Store) UserByID(ctx context.Context, id string) (User, error) {
	var u User
	var created int64
	err := s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT id, email, name, created_at FROM users WHERE id = ?`), id).
		Scan(&u.ID, &u.Email, &u.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, errNoUser
	}
	if err != nil {
		return User{}, fmt.Errorf("user by id: %w", err)
	}
	u.CreatedAt = fromMillis(created)
	return u, nil
}

// HasUsers reports whether any account exists.
func (s *Store) HasUsers(ctx context.Context) (bool, error) {
	var one int
	err := s.DB.QueryRowContext(ctx, `SELECT 1 FROM users LIMIT 1`).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("any user: %w", err)
	}
	return true, nil
}

// StartSession stores the first refresh token of a new family (a login) for userID.
func (s *Store) StartSession(ctx context.Context, first RefreshToken) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO refresh_families (id, user_id, created_at) VALUES (?, ?, ?)`),
			first.FamilyID, first.UserID, millis(first.IssuedAt)); err != nil {
			return fmt.Errorf("insert refresh family: %w", err)
		}
		return s.insertRefresh(ctx, tx, first)
	})
}

// RotateRefresh spends the refresh token whose hash is hash and stores next in its family,
// in one transaction, and returns the token's user; next's FamilyID and UserID are filled in.
// An unknown or expired token is refused. A spent one, or one a concurrent call spent first,
// revokes its family, committed although the call fails: one conditional UPDATE spends the
// token, so two calls with it never both succeed, whatever the isolation level.
func (s *Store) RotateRefresh(ctx context.Context, hash string, next RefreshToken, now time.Time) (_ RefreshToken, err error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return RefreshToken{}, fmt.Errorf("rotate refresh: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	cur, err := s.refreshByHash(ctx, tx, hash)
	if err != nil {
		return RefreshToken{}, err
	}
	verdict := cur.verdict(now)
	if verdict == refreshValid {
		res, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL`),
			millis(now), hash)
		if err != nil {
			return RefreshToken{}, fmt.Errorf("spend refresh token: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return RefreshToken{}, fmt.Errorf("spend refresh token: %w", err)
		} else if n == 0 {
			verdict = refreshReused // a concurrent call spent it between our read and write
		}
	}
	switch verdict {
	case refreshValid:
		next.FamilyID, next.UserID = cur.FamilyID, cur.UserID
		if err := s.insertRefresh(ctx, tx, next); err != nil {
			return RefreshToken{}, err
		}
	case refreshReused:
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE refresh_families SET revoked_at = ?, revoke_reason = ? WHERE id = ? AND revoked_at IS NULL`),
			millis(now), revokedForReuse, cur.FamilyID); err != nil {
			return RefreshToken{}, fmt.Errorf("revoke refresh family: %w", err)
		}
	default:
		return RefreshToken{}, verdict.err() // nothing written; the deferred rollback ends tx
	}
	if err := tx.Commit(); err != nil {
		return RefreshToken{}, fmt.Errorf("rotate refresh: commit: %w", err)
	}
	if verdict != refreshValid {
		return RefreshToken{}, verdict.err()
	}
	return next, nil
}

// RefreshByHash returns the stored state of a refresh token (for tests and operators), or
// the same 401 a client presenting an unknown token gets.
func (s *Store) RefreshByHash(ctx context.Context, hash string) (RefreshToken, error) {
	return s.refreshByHash(ctx, s.DB, hash)
}

// querier is what both *sql.DB and *sql.Tx offer for reads.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ querier = (*sql.Tx)(nil)
	_ querier = (*sqldb.DB)(nil)
)

func (s *Store) refreshByHash(ctx context.Context, q querier, hash string) (RefreshToken, error) {
	t := RefreshToken{Hash: hash}
	var issued, expires int64
	var used, revoked sql.NullInt64
	var reason sql.NullString
	err := q.QueryRowContext(ctx, s.DB.Rebind(`SELECT t.family_id, f.user_id, t.issued_at, t.expires_at, t.used_at, f.revoked_at, f.revoke_reason
		FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id WHERE t.token_hash = ?`), hash).
		Scan(&t.FamilyID, &t.UserID, &issued, &expires, &used, &revoked, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return RefreshToken{}, errRefreshInvalid
	}
	if err != nil {
		return RefreshToken{}, fmt.Errorf("read refresh token: %w", err)
	}
	t.IssuedAt, t.ExpiresAt = fromMillis(issued), fromMillis(expires)
	if used.Valid {
		t.UsedAt = fromMillis(used.Int64)
	}
	if revoked.Valid {
		t.FamilyRevoked = fromMillis(revoked.Int64)
	}
	t.RevokedBecause = reason.String
	return t, nil
}

func (s *Store) insertRefresh(ctx context.Context, tx *sql.Tx, t RefreshToken) error {
	_, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO refresh_tokens (token_hash, family_id, issued_at, expires_at) VALUES (?, ?, ?, ?)`),
		t.Hash, t.FamilyID, millis(t.IssuedAt), millis(t.ExpiresAt))
	if err != nil {
		return fmt.Errorf("insert refresh token: %w", err)
	}
	return nil
}

// PruneRefresh deletes refresh tokens that expired before before, then families left with
// no token. A pruned spent token no longer triggers reuse detection; it is refused as
// unknown instead, which is safe: it expired long ago.
func (s *Store) PruneRefresh(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.DB.Rebind(`DELETE FROM refresh_tokens WHERE expires_at < ?`), millis(before))
		if err != nil {
			return fmt.Errorf("prune refresh tokens: %w", err)
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, `DELETE FROM refresh_families WHERE NOT EXISTS
			(SELECT 1 FROM refresh_tokens t WHERE t.family_id = refresh_families.id)`)
		if err != nil {
			return fmt.Errorf("prune refresh families: %w", err)
		}
		return nil
	})
	return n, err
}

// CreateTenant adds t with the hash of its first API key, in one transaction. A name
// already taken is a Conflict.
func (s *Store) CreateTenant(ctx context.Context, t Tenant, keyHash string) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error {
		added, err := s.insertTenant(ctx, tx, t, keyHash)
		if err == nil && !added {
			err = &problem.Error{Code: problem.Conflict, Field: "name", Message: "a tenant has this name already"}
		}
		return err
	})
}

// insertTenant adds t and its key unless a tenant has t's name; added says which.
func (s *Store) insertTenant(ctx context.Context, tx *sql.Tx, t Tenant, keyHash string) (added bool, err error) {
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO tenants (id, name, plan, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`),
		t.ID, t.Name, string(t.Plan), millis(t.CreatedAt))
	if err != nil {
		return false, fmt.Errorf("insert tenant: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO api_keys (key_hash, tenant_id, created_at) VALUES (?, ?, ?)`),
		keyHash, t.ID, millis(t.CreatedAt)); err != nil {
		return false, fmt.Errorf("insert api key: %w", err)
	}
	return true, nil
}

// TenantByKeyHash returns the tenant owning the API key with keyHash, or a NotFound problem.
func (s *Store) TenantByKeyHash(ctx context.Context, keyHash string) (Tenant, error) {
	var t Tenant
	var stored, plan string
	var created int64
	err := s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT k.key_hash, t.id, t.name, t.plan, t.created_at
		FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = ?`), keyHash).
		Scan(&stored, &t.ID, &t.Name, &plan, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Tenant{}, errNoTenant
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("tenant by api key: %w", err)
	}
	if !sameHash(stored, keyHash) {
		return Tenant{}, errNoTenant
	}
	t.Plan, t.CreatedAt = Plan(plan), fromMillis(created)
	return t, nil
}

// SigningKeys returns every stored signing key, in generation order.
func (s *Store) SigningKeys(ctx context.Context) ([]SigningKey, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, generation, private_key, created_at, activates_at FROM signing_keys ORDER BY generation`)
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	defer rows.Close()
	var keys []SigningKey
	for rows.Next() {
		var k SigningKey
		var seed string
		var created, activates int64
		if err := rows.Scan(&k.ID, &k.Generation, &seed, &created, &activates); err != nil {
			return nil, fmt.Errorf("signing keys: %w", err)
		}
		if k.Private, err = decodeSeed(seed); err != nil {
			return nil, fmt.Errorf("signing key %s: %w", k.ID, err)
		}
		k.CreatedAt, k.ActivatesAt = fromMillis(created), fromMillis(activates)
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	return keys, nil
}

// AddSigningKey stores k unless a key of its generation exists; added is false when
// another instance added that generation first, and the caller should read the keys again.
func (s *Store) AddSigningKey(ctx context.Context, k SigningKey) (added bool, err error) {
	res, err := s.DB.ExecContext(ctx, s.DB.Rebind(`INSERT INTO signing_keys (id, generation, private_key, created_at, activates_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		k.ID, k.Generation, encodeSeed(k.Private), millis(k.CreatedAt), millis(k.ActivatesAt))
	if err != nil {
		return false, fmt.Errorf("add signing key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("add signing key: %w", err)
	}
	return n == 1, nil
}

// DeleteSigningKeys removes the keys with the given ids.
func (s *Store) DeleteSigningKeys(ctx context.Context, ids []string) error {
	return s.DB.InTx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`DELETE FROM signing_keys WHERE id = ?`), id); err != nil {
				return fmt.Errorf("delete signing key %s: %w", id, err)
			}
		}
		return nil
	})
}

func encodeSeed(k ed25519.PrivateKey) string { return base64.StdEncoding.EncodeToString(k.Seed()) }

func decodeSeed(s string) (ed25519.PrivateKey, error) {
	seed, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("stored key is not a base64 Ed25519 seed")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// millis and fromMillis convert between time.Time and the BIGINT unix milliseconds the
// schema stores.
func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
