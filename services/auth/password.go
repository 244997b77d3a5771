package auth

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/bcrypt"
)

// DefaultPasswordCost is bcrypt's work factor: about 50ms per hash on a laptop core, slow
// enough that a stolen table of hashes costs years to crack, fast enough for a login.
const DefaultPasswordCost = 10

// Passwords hashes and checks passwords with bcrypt. It is safe for concurrent use.
type Passwords struct {
	cost  int
	dummy []byte
}

// NewPasswords returns Passwords hashing at cost (0 = DefaultPasswordCost). It hashes one
// throwaway password up front: Check compares against that hash when there is no account,
// so an unknown email takes as long as a wrong password.
func NewPasswords(cost int) (*Passwords, error) {
	if cost == 0 {
		cost = DefaultPasswordCost
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("no account has this password"), cost)
	if err != nil {
		return nil, fmt.Errorf("passwords: %w", err)
	}
	return &Passwords{cost: cost, dummy: dummy}, nil
}

// Hash returns the bcrypt hash of password, salt included.
func (p *Passwords) Hash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), p.cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// Check reports whether password matches hash. An empty hash (no such account) is compared
// against the dummy hash and never matches, so both paths do the same work. An error means
// the stored hash is corrupt, not that the password is wrong.
func (p *Passwords) Check(hash, password string) (bool, error) {
	h := []byte(hash)
	if hash == "" {
		h = p.dummy
	}
	err := bcrypt.CompareHashAndPassword(h, []byte(password))
	switch {
	case err == nil:
		return hash != "", nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return false, nil
	}
	return false, fmt.Errorf("check password: %w", err)
}
