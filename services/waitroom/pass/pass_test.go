package pass

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// key derives a deterministic key pair from a one-byte seed pattern.
func key(t *testing.T, b byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune(b)), ed25519.SeedSize)))
	return priv.Public().(ed25519.PublicKey), priv
}

func TestVerify(t *testing.T) {
	pub, priv := key(t, 'a')
	otherPub, otherPriv := key(t, 'b')
	now := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	valid := Pass{EventID: "evt-040", User: "acc-1", ExpiresAt: now.Add(5 * time.Minute)}
	token := Sign(priv, valid)
	body, sig, _ := strings.Cut(token, ".")

	tamperedBody := func() string {
		raw, _ := encoding.DecodeString(body)
		raw = []byte(strings.Replace(string(raw), "acc-1", "acc-2", 1))
		return encoding.EncodeToString(raw) + "." + sig
	}()

	tests := []struct {
		name    string
		pub     ed25519.PublicKey
		token   string
		now     time.Time
		want    Pass
		wantErr error
	}{
		{"valid", pub, token, now, valid, nil},
		{"valid one second before expiry", pub, token, valid.ExpiresAt.Add(-time.Second), valid, nil},
		{"expired at the instant", pub, token, valid.ExpiresAt, Pass{}, ErrExpired},
		{"expired later", pub, token, now.Add(time.Hour), Pass{}, ErrExpired},
		{"tampered body", pub, tamperedBody, now, Pass{}, ErrSignature},
		{"tampered signature", pub, body + "." + encoding.EncodeToString(make([]byte, ed25519.SignatureSize)), now, Pass{}, ErrSignature},
		{"signature of another token", pub, body + "." + strings.SplitN(Sign(priv, Pass{EventID: "evt-001", User: "acc-1", ExpiresAt: valid.ExpiresAt}), ".", 2)[1], now, Pass{}, ErrSignature},
		{"wrong key", otherPub, token, now, Pass{}, ErrSignature},
		{"signed by another key", pub, Sign(otherPriv, valid), now, Pass{}, ErrSignature},
		{"no dot", pub, body + sig, now, Pass{}, ErrMalformed},
		{"empty", pub, "", now, Pass{}, ErrMalformed},
		{"body not base64", pub, "%%%." + sig, now, Pass{}, ErrMalformed},
		{"signature not base64", pub, body + ".%%%", now, Pass{}, ErrMalformed},
		{"signed garbage", pub, func() string {
			b := []byte("not json")
			return encoding.EncodeToString(b) + "." + encoding.EncodeToString(ed25519.Sign(priv, b))
		}(), now, Pass{}, ErrMalformed},
		{"short public key", pub[:16], token, now, Pass{}, ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Verify(tt.pub, tt.token, tt.now)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify(%q) error = %v, want %v", tt.token, err, tt.wantErr)
			}
			if !got.ExpiresAt.Equal(tt.want.ExpiresAt) || got.EventID != tt.want.EventID || got.User != tt.want.User {
				t.Errorf("Verify(%q) = %+v, want %+v", tt.token, got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	pub, priv := key(t, 'a')
	now := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	token := Sign(priv, Pass{EventID: "evt-040", User: "acc-1", ExpiresAt: now.Add(time.Minute)})
	tests := []struct {
		name        string
		event, user string
		now         time.Time
		wantErr     error
	}{
		{"its holder", "evt-040", "acc-1", now, nil},
		{"wrong event", "evt-001", "acc-1", now, ErrWrongHolder},
		{"wrong account", "evt-040", "acc-2", now, ErrWrongHolder},
		{"expired before holder is checked", "evt-001", "acc-2", now.Add(time.Hour), ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(pub, token, tt.now, tt.event, tt.user)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Check(%s, %s) error = %v, want %v", tt.event, tt.user, err, tt.wantErr)
			}
		})
	}
}

func TestSignTruncatesToTheSecond(t *testing.T) {
	pub, priv := key(t, 'a')
	exp := time.Date(2026, 3, 14, 10, 5, 0, 999_000_000, time.FixedZone("BRT", -3*3600))
	got, err := Verify(pub, Sign(priv, Pass{EventID: "e", User: "u", ExpiresAt: exp}), exp.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := exp.Truncate(time.Second); !got.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v", got.ExpiresAt, want)
	}
}

func TestKeyEncoding(t *testing.T) {
	pub, priv := key(t, 'k')
	seed := EncodePrivateKey(priv)
	padded := base64.StdEncoding.EncodeToString(priv.Seed())
	for _, s := range []string{seed, padded, " " + seed + "\n"} {
		got, err := ParsePrivateKey(s)
		if err != nil {
			t.Fatalf("ParsePrivateKey(%q): %v", s, err)
		}
		if !got.Equal(priv) {
			t.Errorf("ParsePrivateKey(%q) is another key", s)
		}
	}
	gotPub, err := ParsePublicKey(EncodePublicKey(pub))
	if err != nil || !gotPub.Equal(pub) {
		t.Errorf("ParsePublicKey(EncodePublicKey(pub)) = %v, %v, want pub", gotPub, err)
	}

	bad := []struct{ name, in string }{
		{"not base64", "!!!"},
		{"too short", base64.RawStdEncoding.EncodeToString(make([]byte, 16))},
		{"empty", ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParsePrivateKey(tt.in); err == nil {
				t.Errorf("ParsePrivateKey(%q) = nil error, want one", tt.in)
			}
			if _, err := ParsePublicKey(tt.in); err == nil {
				t.Errorf("ParsePublicKey(%q) = nil error, want one", tt.in)
			}
		})
	}
}
