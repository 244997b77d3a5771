package token

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestParseJWKSRoundTrip(t *testing.T) {
	pub1, _ := newKey(t, 0)
	pub2, _ := newKey(t, 1)
	doc, err := json.Marshal(JWKS{Keys: []JWK{PublicJWK("k1", pub1), PublicJWK("k2", pub2)}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseJWKS(doc)
	if err != nil {
		t.Fatalf("ParseJWKS: %v", err)
	}
	for kid, want := range map[string][]byte{"k1": pub1, "k2": pub2} {
		got, ok := set.PublicKey(kid)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("PublicKey(%q) = %x, %v, want %x", kid, got, ok, want)
		}
	}
	if _, ok := set.PublicKey("k3"); ok {
		t.Errorf("PublicKey(k3) found a key, want none")
	}
}

func TestParseJWKS(t *testing.T) {
	pub, _ := newKey(t, 0)
	x := PublicJWK("k1", pub).X
	tests := []struct {
		name    string
		doc     string
		kids    []string
		wantErr string
	}{
		{name: "ed25519 key", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"k1","alg":"EdDSA","use":"sig"}]}`, kids: []string{"k1"}},
		{name: "alg and use optional", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"k1"}]}`, kids: []string{"k1"}},
		{name: "other key types skipped", doc: `{"keys":[{"kty":"EC","crv":"P-256","x":"a","y":"b","kid":"ec"},{"kty":"OKP","crv":"X25519","x":"a","kid":"x"}]}`},
		{name: "encryption key skipped", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"k1","use":"enc"}]}`},
		{name: "empty set", doc: `{"keys":[]}`},
		{name: "short x", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k1"}]}`, wantErr: "not a base64url Ed25519"},
		{name: "no kid", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}]}`, wantErr: "no kid"},
		{name: "repeated kid", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"k1"},{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"k1"}]}`, wantErr: "twice"},
		{name: "not json", doc: `keys`, wantErr: "parse jwks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := ParseJWKS([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseJWKS() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseJWKS(): %v", err)
			}
			if len(set) != len(tt.kids) {
				t.Errorf("ParseJWKS() has %d keys, want %d", len(set), len(tt.kids))
			}
			for _, kid := range tt.kids {
				if _, ok := set.PublicKey(kid); !ok {
					t.Errorf("ParseJWKS() lacks kid %q", kid)
				}
			}
		})
	}
}
