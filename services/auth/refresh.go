package auth

import (
	"time"

	"boxoffice.dev/platform/problem"
)

// TokenPair is what a login or a refresh answers.
type TokenPair struct {
	AccessToken  string
	RefreshToken string        // shown once; the store keeps its hash
	ExpiresIn    time.Duration // of the access token
}

// RefreshToken is the stored state of one refresh token. Refresh tokens rotate: each use
// spends the token and issues the next of its family (the login it descends from), and a
// spent token presented again revokes the whole family (RFC 9700, 4.14.2): a thief's copy
// stops working, at the price of logging out a client that sends one refresh twice. See
// docs/lessons/gateway.md, "What it does, step by step".
type RefreshToken struct {
	Hash           string
	FamilyID       string
	UserID         string
	IssuedAt       time.Time
	ExpiresAt      time.Time
	UsedAt         time.Time // zero while unspent
	FamilyRevoked  time.Time // zero while the family is live
	RevokedBecause string
}

// refreshVerdict is what presenting a refresh token means.
type refreshVerdict int

const (
	refreshValid   refreshVerdict = iota
	refreshExpired                // too old: refused, nothing revoked
	refreshRevoked                // its family was revoked earlier
	refreshReused                 // spent already: revoke the family
)

// verdict decides what presenting t at now means. Revocation wins over everything, reuse
// over expiry: a spent token replayed after its expiry is still a stolen copy.
func (t RefreshToken) verdict(now time.Time) refreshVerdict {
	switch {
	case !t.FamilyRevoked.IsZero():
		return refreshRevoked
	case !t.UsedAt.IsZero():
		return refreshReused
	case !now.Before(t.ExpiresAt):
		return refreshExpired
	}
	return refreshValid
}

// Revocation reasons stored with a family.
const revokedForReuse = "refresh token reuse"

// The refresh failures a client sees. All are 401: the client's next step is the same, log
// in; the messages say why, which a thief learns nothing from.
var (
	errRefreshInvalid = problem.New(problem.Unauthorized, "refresh token is invalid or expired")
	errRefreshRevoked = problem.New(problem.Unauthorized, "this session was revoked; log in again")
	errRefreshReused  = problem.New(problem.Unauthorized, "refresh token was already used; the session is revoked, log in again")
)

func (v refreshVerdict) err() error {
	switch v {
	case refreshExpired:
		return errRefreshInvalid
	case refreshRevoked:
		return errRefreshRevoked
	case refreshReused:
		return errRefreshReused
	}
	return nil
}
