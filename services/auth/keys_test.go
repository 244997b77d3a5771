package auth

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var testPolicy = KeyPolicy{RotateEvery: 24 * time.Hour, PublishLead: 10 * time.Minute, TokenTTL: 15 * time.Minute}

// keyAt returns generation gen, created at created and signing from activates.
func keyAt(gen int64, created, activates time.Time) SigningKey {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = byte(gen)
	return SigningKey{ID: fmt.Sprintf("k%d", gen), Generation: gen, Private: ed25519.NewKeyFromSeed(seed),
		CreatedAt: created, ActivatesAt: activates}
}

func kids(keys []SigningKey) string {
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return strings.Join(ids, ",")
}

// TestRotationTimeline walks a fake clock through two days of rotation, adding a key each
// time NextKey says one is due, as the service's rotation loop does.
func TestRotationTimeline(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		name      string
		at        time.Duration // since t0
		force     bool
		wantAdded string // kid added at this step, "" = none
		signer    string
		published string
		expired   string
		states    map[string]KeyState
	}{
		{name: "first start signs at once", at: 0, wantAdded: "k1", signer: "k1", published: "k1",
			states: map[string]KeyState{"k1": KeyActive}},
		{name: "mid-period nothing due", at: 12 * time.Hour, signer: "k1", published: "k1"},
		{name: "just before the lead", at: 24*time.Hour - 10*time.Minute - time.Second, signer: "k1", published: "k1"},
		{name: "one lead before the end a successor is published", at: 24*time.Hour - 10*time.Minute, wantAdded: "k2",
			signer: "k1", published: "k1,k2", states: map[string]KeyState{"k1": KeyActive, "k2": KeyNext}},
		{name: "while the successor waits nothing more is due", at: 24*time.Hour - time.Minute, signer: "k1", published: "k1,k2"},
		{name: "at the period end the successor signs", at: 24 * time.Hour, signer: "k2", published: "k1,k2",
			states: map[string]KeyState{"k1": KeyRetired, "k2": KeyActive}},
		{name: "retired key kept while its tokens live", at: 24*time.Hour + 15*time.Minute - time.Second, signer: "k2", published: "k1,k2",
			states: map[string]KeyState{"k1": KeyRetired}},
		{name: "retired key removed when its last token expired", at: 24*time.Hour + 15*time.Minute, signer: "k2", published: "k2",
			expired: "k1", states: map[string]KeyState{"k1": KeyExpired}},
		{name: "rotate now publishes first", at: 30 * time.Hour, force: true, wantAdded: "k3", signer: "k2", published: "k2,k3",
			expired: "k1", states: map[string]KeyState{"k3": KeyNext}},
		{name: "rotate now again while one waits adds nothing", at: 30*time.Hour + time.Minute, force: true, signer: "k2", published: "k2,k3", expired: "k1"},
		{name: "forced key signs one lead later", at: 30*time.Hour + 10*time.Minute, signer: "k3", published: "k2,k3", expired: "k1"},
		{name: "the forced key's period runs from its activation", at: 54*time.Hour + 10*time.Minute - 10*time.Minute, wantAdded: "k4",
			signer: "k3", published: "k3,k4", expired: "k1,k2"},
	}

	var keys []SigningKey
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			now := t0.Add(st.at)
			ring := NewKeyring(keys, testPolicy)
			added := ""
			if at, due := ring.NextKey(now, st.force); due {
				k := keyAt(int64(len(keys)+1), now, at)
				keys = append(keys, k)
				added = k.ID
				ring = NewKeyring(keys, testPolicy)
			}
			if added != st.wantAdded {
				t.Errorf("NextKey(%v) added %q, want %q", st.at, added, st.wantAdded)
			}
			if s, ok := ring.Signer(now); !ok || s.ID != st.signer {
				t.Errorf("Signer(%v) = %q, %v, want %q", st.at, s.ID, ok, st.signer)
			}
			if got := kids(ring.Published(now)); got != st.published {
				t.Errorf("Published(%v) = %q, want %q", st.at, got, st.published)
			}
			if got := kids(ring.Expired(now)); got != st.expired {
				t.Errorf("Expired(%v) = %q, want %q", st.at, got, st.expired)
			}
			for kid, want := range st.states {
				if got, ok := ring.State(kid, now); !ok || got != want {
					t.Errorf("State(%s, %v) = %q, want %q", kid, st.at, got, want)
				}
			}
		})
	}
}

func TestNextKey(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		keys    []SigningKey
		now     time.Time
		force   bool
		wantDue bool
		wantAt  time.Time
	}{
		{name: "no keys", now: t0, wantDue: true, wantAt: t0},
		{name: "no keys forced still signs at once", now: t0, force: true, wantDue: true, wantAt: t0},
		{name: "missed rotation still leads", keys: []SigningKey{keyAt(1, t0, t0)}, now: t0.Add(72 * time.Hour),
			wantDue: true, wantAt: t0.Add(72*time.Hour + 10*time.Minute)},
		{name: "on schedule signs at the period end", keys: []SigningKey{keyAt(1, t0, t0)}, now: t0.Add(23*time.Hour + 50*time.Minute),
			wantDue: true, wantAt: t0.Add(24 * time.Hour)},
		{name: "late by five minutes signs a full lead from now", keys: []SigningKey{keyAt(1, t0, t0)}, now: t0.Add(23*time.Hour + 55*time.Minute),
			wantDue: true, wantAt: t0.Add(24*time.Hour + 5*time.Minute)},
		{name: "a waiting key blocks a forced one", keys: []SigningKey{keyAt(1, t0, t0), keyAt(2, t0, t0.Add(time.Hour))},
			now: t0.Add(time.Minute), force: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, due := NewKeyring(tt.keys, testPolicy).NextKey(tt.now, tt.force)
			if due != tt.wantDue || !at.Equal(tt.wantAt) {
				t.Errorf("NextKey(%v, %v) = %v, %v, want %v, %v", tt.now, tt.force, at, due, tt.wantAt, tt.wantDue)
			}
		})
	}
}

func TestKeyringOrdersByGeneration(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ring := NewKeyring([]SigningKey{keyAt(2, t0, t0.Add(time.Hour)), keyAt(1, t0, t0)}, testPolicy)
	if got := kids(ring.Keys()); got != "k1,k2" {
		t.Errorf("Keys() = %q, want k1,k2", got)
	}
	if s, _ := ring.Signer(t0.Add(2 * time.Hour)); s.ID != "k2" {
		t.Errorf("Signer(+2h) = %q, want k2", s.ID)
	}
	if _, ok := NewKeyring(nil, testPolicy).Signer(t0); ok {
		t.Errorf("Signer() of an empty ring found a key, want none")
	}
}

func TestKeyPolicyValidate(t *testing.T) {
	tests := []struct {
		name string
		p    KeyPolicy
		ok   bool
	}{
		{"default-like", testPolicy, true},
		{"no lead", KeyPolicy{RotateEvery: time.Hour, TokenTTL: time.Minute}, false},
		{"lead as long as the period", KeyPolicy{RotateEvery: time.Hour, PublishLead: time.Hour, TokenTTL: time.Minute}, false},
		{"no period", KeyPolicy{TokenTTL: time.Minute}, false},
		{"no ttl", KeyPolicy{RotateEvery: time.Hour}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate(%+v) = %v, want ok %v", tt.p, err, tt.ok)
			}
		})
	}
}

func TestPublicMatchesPrivate(t *testing.T) {
	k := keyAt(1, time.Time{}, time.Time{})
	msg := []byte("boxoffice")
	if !ed25519.Verify(k.Public(), msg, ed25519.Sign(k.Private, msg)) {
		t.Errorf("Public() does not verify what Private signs")
	}
	if slices.Equal(k.Public(), keyAt(2, time.Time{}, time.Time{}).Public()) {
		t.Errorf("two generations share a public key")
	}
}
