package auth

import (
	"errors"
	"testing"
	"time"
)

func TestRefreshVerdict(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	live := RefreshToken{IssuedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)}
	with := func(f func(*RefreshToken)) RefreshToken { t := live; f(&t); return t }
	tests := []struct {
		name string
		tok  RefreshToken
		want refreshVerdict
		err  error
	}{
		{name: "fresh", tok: live, want: refreshValid},
		{name: "expires exactly now", tok: with(func(t *RefreshToken) { t.ExpiresAt = now }), want: refreshExpired, err: errRefreshInvalid},
		{name: "spent", tok: with(func(t *RefreshToken) { t.UsedAt = now.Add(-time.Minute) }), want: refreshReused, err: errRefreshReused},
		{name: "spent and expired is still reuse", tok: with(func(t *RefreshToken) {
			t.UsedAt, t.ExpiresAt = now.Add(-2*time.Hour), now.Add(-time.Hour)
		}), want: refreshReused, err: errRefreshReused},
		{name: "family revoked", tok: with(func(t *RefreshToken) { t.FamilyRevoked = now.Add(-time.Minute) }), want: refreshRevoked, err: errRefreshRevoked},
		{name: "revoked wins over spent", tok: with(func(t *RefreshToken) {
			t.FamilyRevoked, t.UsedAt = now.Add(-time.Minute), now.Add(-time.Minute)
		}), want: refreshRevoked, err: errRefreshRevoked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tok.verdict(now)
			if got != tt.want {
				t.Errorf("verdict() = %v, want %v", got, tt.want)
			}
			if err := got.err(); !errors.Is(err, tt.err) {
				t.Errorf("verdict().err() = %v, want %v", err, tt.err)
			}
		})
	}
}
