package auth

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
	"testing/iotest"
)

func TestNewSecretShape(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
	}{
		{"api key", APIKeyPrefix},
		{"refresh token", refreshTokenPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newSecret(rand.Reader, tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !wellFormed(s, tt.prefix) {
				t.Errorf("wellFormed(%q, %q) = false, want true", s, tt.prefix)
			}
			other, _ := newSecret(rand.Reader, tt.prefix)
			if other == s {
				t.Errorf("two secrets are equal: %q", s)
			}
		})
	}
}

func TestNewSecretFailsWithoutRandomness(t *testing.T) {
	if _, err := newSecret(iotest.ErrReader(iotest.ErrTimeout), APIKeyPrefix); err == nil {
		t.Errorf("newSecret(failing reader) = nil error, want one")
	}
	if _, err := newSecret(bytes.NewReader(make([]byte, 5)), APIKeyPrefix); err == nil {
		t.Errorf("newSecret(5 bytes) = nil error, want one")
	}
}

func TestWellFormed(t *testing.T) {
	key := DemoAPIKey("s", "t")
	tests := []struct {
		name, in, prefix string
		want             bool
	}{
		{"api key", key, APIKeyPrefix, true},
		{"api key as refresh token", key, refreshTokenPrefix, false},
		{"no prefix", strings.TrimPrefix(key, APIKeyPrefix), APIKeyPrefix, false},
		{"short", key[:len(key)-1], APIKeyPrefix, false},
		{"not base64url", APIKeyPrefix + strings.Repeat("+", 43), APIKeyPrefix, false},
		{"empty", "", APIKeyPrefix, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wellFormed(tt.in, tt.prefix); got != tt.want {
				t.Errorf("wellFormed(%q, %q) = %v, want %v", tt.in, tt.prefix, got, tt.want)
			}
		})
	}
}

func TestDemoAPIKeyIsDeterministicPerSecretAndTenant(t *testing.T) {
	a := DemoAPIKey("boxoffice-demo", "ticketsrus")
	tests := []struct {
		name  string
		other string
		same  bool
	}{
		{"same inputs", DemoAPIKey("boxoffice-demo", "ticketsrus"), true},
		{"other tenant", DemoAPIKey("boxoffice-demo", "freebie"), false},
		{"other secret", DemoAPIKey("changed", "ticketsrus"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (a == tt.other) != tt.same {
				t.Errorf("DemoAPIKey equal = %v, want %v (%q vs %q)", a == tt.other, tt.same, a, tt.other)
			}
		})
	}
	if !wellFormed(a, APIKeyPrefix) {
		t.Errorf("DemoAPIKey() = %q, not a well-formed API key", a)
	}
}

func TestHashSecret(t *testing.T) {
	h := HashSecret("bo_live_x")
	if len(h) != 64 || h != HashSecret("bo_live_x") || h == HashSecret("bo_live_y") {
		t.Errorf("HashSecret() = %q, want a stable 64-hex-digit SHA-256 distinct per input", h)
	}
	if !sameHash(h, HashSecret("bo_live_x")) || sameHash(h, HashSecret("bo_live_y")) {
		t.Errorf("sameHash disagrees with equality")
	}
}
