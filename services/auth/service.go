package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/auth/token"
)

// Config is the auth service's own settings; run.go reads them from the environment and
// DefaultConfig holds the defaults.
type Config struct {
	Issuer       string        // iss of every access token (AUTH_ISSUER)
	Audience     string        // aud of every access token
	AccessTTL    time.Duration // ACCESS_TOKEN_TTL; also how long a retired key stays published
	RefreshTTL   time.Duration // REFRESH_TOKEN_TTL, from each refresh
	Rotation     time.Duration // AUTH_KEY_ROTATION: how long a key signs
	PublishLead  time.Duration // AUTH_KEY_PUBLISH_LEAD: how long a key is published before it signs
	PasswordCost int           // bcrypt cost; 0 = DefaultPasswordCost
	DemoSecret   string        // DEMO_SECRET: derives the demo tenants' API keys
}

// DefaultConfig is the configuration with every default applied.
func DefaultConfig() Config {
	return Config{
		Issuer:      "boxoffice-auth",
		Audience:    "boxoffice",
		AccessTTL:   15 * time.Minute,
		RefreshTTL:  30 * 24 * time.Hour,
		Rotation:    24 * time.Hour,
		PublishLead: 10 * time.Minute,
		DemoSecret:  "boxoffice-demo",
	}
}

// keyPolicy is the rotation schedule the configuration implies.
func (c Config) keyPolicy() KeyPolicy {
	return KeyPolicy{RotateEvery: c.Rotation, PublishLead: c.PublishLead, TokenTTL: c.AccessTTL}
}

// Service is the auth service's behaviour over its store: sign-up, login, refresh, tenants,
// API keys and signing keys. Transports (http.go, grpc.go) only translate to and from it.
//
// The exported fields may be replaced after NewService and before first use, never after.
// A Service is safe for concurrent use.
type Service struct {
	Store  *Store
	Config Config
	// Clock dates tokens, keys and rows; the zero Clock is time.Now. Tests move it by hand.
	Clock clock.Clock
	// Random feeds secrets and keys; NewService sets crypto/rand.Reader.
	Random io.Reader
	// IDs makes the ids of users, tenants, sessions, tokens and events; nil means ids.New.
	IDs ids.Func
	// Log receives what operators need to know (key rotation, refresh token reuse).
	Log *slog.Logger
	// Events, when true, writes a boxoffice.auth.user.registered event to the outbox with
	// each sign-up; Committed (nil = none) is then called after the commit, to wake the relay.
	Events    bool
	Committed func()

	passwords *Passwords
	ring      atomic.Pointer[Keyring] // this instance's copy of the keys; see RotateKeys
}

// NewService returns a Service over store, or an error when cfg cannot work.
func NewService(store *Store, cfg Config) (*Service, error) {
	if cfg.Issuer == "" || cfg.Audience == "" || cfg.AccessTTL <= 0 || cfg.RefreshTTL <= 0 {
		return nil, errors.New("auth: issuer, audience and token lifetimes are required")
	}
	if err := cfg.keyPolicy().Validate(); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	pw, err := NewPasswords(cfg.PasswordCost)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return &Service{
		Store:     store,
		Config:    cfg,
		Random:    rand.Reader,
		Log:       slog.New(slog.DiscardHandler),
		passwords: pw,
	}, nil
}

// errBadCredentials is the one answer to every failed login, whatever failed.
var errBadCredentials = problem.New(problem.Unauthorized, "email or password is wrong")

// Signup creates an account and returns it. A taken email is a Conflict: unlike a login, a
// sign-up cannot hide that an account exists, so the gateway's per-IP limits are what keep
// it from being used to list accounts at scale.
func (s *Service) Signup(ctx context.Context, email, password, name string) (User, error) {
	a, err := ValidateSignup(email, password, name)
	if err != nil {
		return User{}, err
	}
	hash, err := s.passwords.Hash(a.Password)
	if err != nil {
		return User{}, fmt.Errorf("signup: %w", err)
	}
	u := User{ID: s.IDs.New("usr_"), Email: a.Email, Name: a.Name, CreatedAt: s.Clock.Now().UTC()}
	var ev *outbox.Event
	if s.Events {
		if ev, err = userRegistered(s.IDs.New("evt_"), u); err != nil {
			return User{}, fmt.Errorf("signup: %w", err)
		}
	}
	if err := s.Store.CreateUser(ctx, u, hash, ev); err != nil {
		return User{}, err
	}
	if ev != nil && s.Committed != nil {
		s.Committed()
	}
	return u, nil
}

// Login checks an email and password and starts a session: an access token and the first
// refresh token of a new family. An unknown email and a wrong password get the same answer
// after the same work (a comparison against a dummy hash), so the time taken cannot tell an
// attacker which emails have accounts.
func (s *Service) Login(ctx context.Context, email, password string) (TokenPair, error) {
	email, err := ValidateLogin(email, password)
	if err != nil {
		return TokenPair{}, err
	}
	u, hash, err := s.Store.UserByEmail(ctx, email)
	if err != nil && !errors.Is(err, errNoUser) {
		return TokenPair{}, err
	}
	ok, err := s.passwords.Check(hash, password)
	if err != nil {
		return TokenPair{}, fmt.Errorf("login: %w", err)
	}
	if !ok {
		return TokenPair{}, errBadCredentials
	}
	now := s.Clock.Now()
	access, err := s.issueAccess(u.ID, now)
	if err != nil {
		return TokenPair{}, err
	}
	raw, first, err := s.newRefresh(now)
	if err != nil {
		return TokenPair{}, err
	}
	first.FamilyID, first.UserID = s.IDs.New("fam_"), u.ID
	if err := s.Store.StartSession(ctx, first); err != nil {
		return TokenPair{}, fmt.Errorf("login: %w", err)
	}
	return TokenPair{AccessToken: access, RefreshToken: raw, ExpiresIn: s.Config.AccessTTL}, nil
}

// Refresh spends a refresh token and returns a new pair; see RefreshToken for rotation and
// what reuse of a spent token does.
func (s *Service) Refresh(ctx context.Context, refreshToken string) (TokenPair, error) {
	if refreshToken == "" {
		return TokenPair{}, problem.InvalidField("refresh_token", "is required")
	}
	if len(refreshToken) > maxRefreshToken || !wellFormed(refreshToken, refreshTokenPrefix) {
		return TokenPair{}, errRefreshInvalid
	}
	now := s.Clock.Now()
	raw, next, err := s.newRefresh(now)
	if err != nil {
		return TokenPair{}, err
	}
	next, err = s.Store.RotateRefresh(ctx, HashSecret(refreshToken), next, now)
	if errors.Is(err, errRefreshReused) {
		s.Log.WarnContext(ctx, "refresh token reused; its session is revoked")
	}
	if err != nil {
		return TokenPair{}, err
	}
	access, err := s.issueAccess(next.UserID, now)
	if err != nil {
		return TokenPair{}, err
	}
	return TokenPair{AccessToken: access, RefreshToken: raw, ExpiresIn: s.Config.AccessTTL}, nil
}

// User returns the account with id.
func (s *Service) User(ctx context.Context, id string) (User, error) {
	if id == "" {
		return User{}, problem.InvalidField("id", "is required")
	}
	return s.Store.UserByID(ctx, id)
}

// CreateTenant adds a partner tenant and returns it with its API key. The key is returned
// only here; the store keeps its hash.
func (s *Service) CreateTenant(ctx context.Context, name, plan string) (Tenant, string, error) {
	if err := ValidateTenantName(name); err != nil {
		return Tenant{}, "", err
	}
	p, err := ParsePlan(plan)
	if err != nil {
		return Tenant{}, "", err
	}
	key, err := newSecret(s.Random, APIKeyPrefix)
	if err != nil {
		return Tenant{}, "", fmt.Errorf("create tenant: %w", err)
	}
	t := Tenant{ID: s.IDs.New("ten_"), Name: name, Plan: p, CreatedAt: s.Clock.Now().UTC()}
	if err := s.Store.CreateTenant(ctx, t, HashSecret(key)); err != nil {
		return Tenant{}, "", err
	}
	return t, key, nil
}

// ResolveAPIKey returns the tenant owning key, or NotFound. A key of the wrong shape is
// NotFound too, without a lookup.
func (s *Service) ResolveAPIKey(ctx context.Context, key string) (Tenant, error) {
	if key == "" {
		return Tenant{}, problem.InvalidField("api_key", "is required")
	}
	if !wellFormed(key, APIKeyPrefix) {
		return Tenant{}, errNoTenant
	}
	return s.Store.TenantByKeyHash(ctx, HashSecret(key))
}

// issueAccess signs an access token for userID with the key active at now.
func (s *Service) issueAccess(userID string, now time.Time) (string, error) {
	key, ok := s.keyring().Signer(now)
	if !ok {
		return "", problem.New(problem.Unavailable, "no signing key is active yet")
	}
	return token.Sign(key.Private, key.ID, token.Claims{
		Subject:   userID,
		Issuer:    s.Config.Issuer,
		Audience:  s.Config.Audience,
		ID:        s.IDs.New("at_"),
		IssuedAt:  now,
		NotBefore: now,
		ExpiresAt: now.Add(s.Config.AccessTTL),
	})
}

// newRefresh returns a new refresh token and its record, valid RefreshTTL from now.
func (s *Service) newRefresh(now time.Time) (string, RefreshToken, error) {
	raw, err := newSecret(s.Random, refreshTokenPrefix)
	if err != nil {
		return "", RefreshToken{}, fmt.Errorf("refresh token: %w", err)
	}
	return raw, RefreshToken{Hash: HashSecret(raw), IssuedAt: now, ExpiresAt: now.Add(s.Config.RefreshTTL)}, nil
}
