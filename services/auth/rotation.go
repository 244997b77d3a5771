package auth

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"time"

	"boxoffice.dev/platform/ids"
	"boxoffice.dev/services/auth/token"
)

// keyCheck is how often an instance rereads the stored keys: a fraction of the publish lead,
// so every instance learns of a key another added before it signs, and all switch to it at
// the same instant (give or take clock skew) without talking to each other.
func (c Config) keyCheck() time.Duration {
	return min(max(c.PublishLead/4, time.Second), time.Minute)
}

// refreshPruneEvery spaces the deletion of expired refresh tokens: housekeeping, not latency.
const refreshPruneEvery = time.Hour

// keyring returns this instance's copy of the keys (empty before the first RotateKeys).
func (s *Service) keyring() *Keyring {
	if r := s.ring.Load(); r != nil {
		return r
	}
	return NewKeyring(nil, s.Config.keyPolicy())
}

// RotateKeys brings the stored keys up to date at Now and refreshes this instance's copy:
// it adds the next key when one is due (at once when force is set, for the admin's "rotate
// now"), and deletes keys whose last token has expired. Every instance calls it on its
// schedule; when two add the same generation at once, one insert wins and both read the
// winner's key.
func (s *Service) RotateKeys(ctx context.Context, force bool) (*Keyring, error) {
	keys, err := s.Store.SigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("rotate keys: %w", err)
	}
	now := s.Clock.Now()
	ring := NewKeyring(keys, s.Config.keyPolicy())
	if at, due := ring.NextKey(now, force); due {
		gen := int64(1)
		if len(keys) > 0 {
			gen = ring.keys[len(ring.keys)-1].Generation + 1
		}
		k, err := s.newSigningKey(gen, now, at)
		if err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		added, err := s.Store.AddSigningKey(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		if added {
			s.Log.InfoContext(ctx, "signing key published", "kid", k.ID, "generation", k.Generation,
				"signs_from", k.ActivatesAt, "forced", force)
		}
		if keys, err = s.Store.SigningKeys(ctx); err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		ring = NewKeyring(keys, s.Config.keyPolicy())
	}
	if expired := ring.Expired(now); len(expired) > 0 {
		var ids []string
		for _, k := range expired {
			ids = append(ids, k.ID)
		}
		if err := s.Store.DeleteSigningKeys(ctx, ids); err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		s.Log.InfoContext(ctx, "signing keys removed", "kids", ids)
		ring = NewKeyring(ring.Published(now), s.Config.keyPolicy())
	}
	s.ring.Store(ring)
	return ring, nil
}

// newSigningKey makes generation gen's key. The kid carries the generation for people
// reading logs, and random bytes so a database reset never reissues a kid a verifier may
// still have cached with another key.
func (s *Service) newSigningKey(gen int64, now, activates time.Time) (SigningKey, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(s.Random, seed); err != nil {
		return SigningKey{}, fmt.Errorf("read random: %w", err)
	}
	return SigningKey{
		ID:          fmt.Sprintf("k%d_%s", gen, ids.New("")[:8]),
		Generation:  gen,
		Private:     ed25519.NewKeyFromSeed(seed),
		CreatedAt:   now.UTC(),
		ActivatesAt: activates.UTC(),
	}, nil
}

// JWKS is the public key set verifiers need now: keys waiting for their turn, the one
// signing, and retired ones whose tokens may still be live.
func (s *Service) JWKS() token.JWKS {
	set := token.JWKS{Keys: []token.JWK{}}
	for _, k := range s.keyring().Published(s.Clock.Now()) {
		set.Keys = append(set.Keys, token.PublicJWK(k.ID, k.Public()))
	}
	return set
}

// JWKSMaxAge is how long a verifier may cache the JWKS: half the publish lead, so a cache
// filled just before a key was added still refreshes before that key signs.
func (s *Service) JWKSMaxAge() time.Duration { return s.Config.PublishLead / 2 }

// KeyInfo describes a signing key for operators; never its private half.
type KeyInfo struct {
	ID          string
	Generation  int64
	State       KeyState
	CreatedAt   time.Time
	ActivatesAt time.Time
}

// Keys lists this instance's copy of the published keys with their states now.
func (s *Service) Keys() []KeyInfo {
	ring, now := s.keyring(), s.Clock.Now()
	var out []KeyInfo
	for _, k := range ring.Published(now) {
		st, _ := ring.State(k.ID, now)
		out = append(out, KeyInfo{ID: k.ID, Generation: k.Generation, State: st, CreatedAt: k.CreatedAt, ActivatesAt: k.ActivatesAt})
	}
	return out
}

// PruneRefresh deletes the refresh tokens that have expired, for Server.Every at
// refreshPruneEvery: housekeeping, so a failure waits for the next tick.
func (s *Service) PruneRefresh(ctx context.Context) error {
	n, err := s.Store.PruneRefresh(ctx, s.Clock.Now())
	if err != nil {
		return err
	}
	if n > 0 {
		s.Log.InfoContext(ctx, "expired refresh tokens pruned", "count", n)
	}
	return nil
}
