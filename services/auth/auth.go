// Package auth is BoxOffice's auth service: user accounts and their password hashes, access
// and refresh tokens, the keys that sign access tokens (published as a JWKS, rotated on a
// schedule), and API keys that name a partner tenant and its plan.
//
// This file holds the domain types and the rules on their input, with no I/O. The service's
// behaviour (service.go, rotation.go) runs those rules over the store (store.go).
package auth

import (
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"boxoffice.dev/platform/problem"
)

// User is an account. The password hash never leaves the store and the service.
type User struct {
	ID        string
	Email     string // normalised: trimmed, lower-case
	Name      string
	CreatedAt time.Time
}

// Plan is a partner tenant's service level; the gateway picks rate limits and quotas by it.
type Plan string

// The plans a tenant can have.
const (
	PlanFree     Plan = "free"
	PlanPartner  Plan = "partner"
	PlanInternal Plan = "internal" // BoxOffice's own tools; may call the admin API
)

// ParsePlan returns the Plan named s, or an Invalid problem naming field "plan".
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(s); p {
	case PlanFree, PlanPartner, PlanInternal:
		return p, nil
	}
	return "", problem.InvalidField("plan", "must be free, partner or internal")
}

// Tenant is a partner organisation calling the API with an API key.
type Tenant struct {
	ID        string
	Name      string
	Plan      Plan
	CreatedAt time.Time
}

// Limits on input, so a request cannot make the service store or hash arbitrary amounts.
const (
	maxEmailLen     = 254 // RFC 5321 path limit
	minPasswordLen  = 8
	maxPasswordLen  = 72 // bytes; bcrypt ignores (x/crypto refuses) anything longer
	maxNameLen      = 100
	maxTenantLen    = 40
	minTenantLen    = 2
	maxRefreshToken = 200
)

// NormalizeEmail trims s and lower-cases it, so "Ana@Example.org " and "ana@example.org"
// are one account. Lower-casing the local part is not what RFC 5321 says, but it is what
// people expect of a login, and no real mailbox provider tells the two apart.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// NewAccount is a sign-up request after validation: the email normalised, the name trimmed.
type NewAccount struct {
	Email    string
	Password string
	Name     string
}

// ValidateSignup checks a sign-up request and returns it normalised, or an Invalid problem
// naming the first field at fault.
func ValidateSignup(email, password, name string) (NewAccount, error) {
	a := NewAccount{Email: NormalizeEmail(email), Password: password, Name: strings.TrimSpace(name)}
	if err := validateEmail(a.Email); err != nil {
		return NewAccount{}, err
	}
	if err := validatePassword(a.Password); err != nil {
		return NewAccount{}, err
	}
	switch {
	case a.Name == "":
		return NewAccount{}, problem.InvalidField("name", "is required")
	case utf8.RuneCountInString(a.Name) > maxNameLen:
		return NewAccount{}, problem.InvalidField("name", "must be at most %d characters", maxNameLen)
	case !utf8.ValidString(a.Name) || strings.ContainsFunc(a.Name, unicode.IsControl):
		return NewAccount{}, problem.InvalidField("name", "must be printable text")
	}
	return a, nil
}

// validateEmail accepts a bare address (no display name, no angle brackets) with a dot in
// its domain; it says nothing about whether the mailbox exists.
func validateEmail(e string) error {
	if e == "" {
		return problem.InvalidField("email", "is required")
	}
	if len(e) > maxEmailLen {
		return problem.InvalidField("email", "must be at most %d characters", maxEmailLen)
	}
	addr, err := mail.ParseAddress(e)
	if err != nil || addr.Address != e || addr.Name != "" {
		return problem.InvalidField("email", "is not an email address")
	}
	_, domain, _ := strings.Cut(e, "@")
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") {
		return problem.InvalidField("email", "is not an email address")
	}
	return nil
}

func validatePassword(p string) error {
	switch {
	case p == "":
		return problem.InvalidField("password", "is required")
	case utf8.RuneCountInString(p) < minPasswordLen:
		return problem.InvalidField("password", "must be at least %d characters", minPasswordLen)
	case len(p) > maxPasswordLen:
		return problem.InvalidField("password", "must be at most %d bytes", maxPasswordLen)
	}
	return nil
}

// ValidateLogin checks that both credentials are present. It deliberately does not check
// the email's shape: a login answers the same for every wrong pair (see Service.Login).
func ValidateLogin(email, password string) (string, error) {
	e := NormalizeEmail(email)
	switch {
	case e == "":
		return "", problem.InvalidField("email", "is required")
	case password == "":
		return "", problem.InvalidField("password", "is required")
	case len(e) > maxEmailLen:
		return "", problem.InvalidField("email", "must be at most %d characters", maxEmailLen)
	case len(password) > maxPasswordLen:
		return "", problem.InvalidField("password", "must be at most %d bytes", maxPasswordLen)
	}
	return e, nil
}

// ValidateTenantName accepts 2 to 40 lower-case letters, digits and inner hyphens: the name
// appears in metrics labels and logs, so it is kept to a safe alphabet.
func ValidateTenantName(name string) error {
	switch {
	case name == "":
		return problem.InvalidField("name", "is required")
	case len(name) < minTenantLen || len(name) > maxTenantLen:
		return problem.InvalidField("name", "must be %d to %d characters", minTenantLen, maxTenantLen)
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return problem.InvalidField("name", "must not start or end with a hyphen")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return problem.InvalidField("name", "may hold only a-z, 0-9 and hyphens")
		}
	}
	return nil
}
