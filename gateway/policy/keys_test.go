package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		key  string
		want []KeyPart
	}{
		{"user", []KeyPart{{Kind: KeyUser}}},
		{"ip", []KeyPart{{Kind: KeyIP}}},
		{"net", []KeyPart{{Kind: KeyNet}}},
		{"json:email+net", []KeyPart{{Kind: KeyJSON, Name: "email"}, {Kind: KeyNet}}},
		{"net+route", []KeyPart{{Kind: KeyNet}, {Kind: KeyRoute}}},
		{"user+route", []KeyPart{{Kind: KeyUser}, {Kind: KeyRoute}}},
		{"header:x-client-version", []KeyPart{{Kind: KeyHeader, Name: "X-Client-Version"}}},
		{"plan", []KeyPart{{Kind: KeyPlan}}},
		{"global", []KeyPart{{Kind: KeyGlobal}}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := ParseKey(tt.key)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ParseKey(%q) = %v, %v, want %v", tt.key, got, err, tt.want)
			}
		})
	}
}

func TestParseKeyRefuses(t *testing.T) {
	tests := []struct {
		key  string
		want string // in the error
	}{
		{"", "want user, ip, net, apikey"},
		{"net:24", "net takes no argument"},
		{"net:/64", "net takes no argument"},
		{"net+json:email+net", "net named twice"},
		{"ip+net", "ip and net together"},
		{"json:email+net+ip", "ip and net together"},
		{"nets", `unknown dimension "nets"`},
		{"json:", "want json:<top-level field>"},
		{"global:x", "global takes no argument"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := ParseKey(tt.key)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseKey(%q) = %v, %v, want an error containing %q", tt.key, got, err, tt.want)
			}
		})
	}
}

// A limit keyed by net validates and compiles like any other, and a bad one is refused with
// its key field named.
func TestLimitKeyedByNet(t *testing.T) {
	doc := strings.Replace(base, "{id: login-per-ip, key: ip,", "{id: login-per-ip, key: \"json:email+net\",", 1)
	s := mustCompile(t, doc)
	if got, want := s.Limit("login-per-ip").Key, []KeyPart{{Kind: KeyJSON, Name: "email"}, {Kind: KeyNet}}; !slices.Equal(got, want) {
		t.Errorf("compiled key = %v, want %v", got, want)
	}
	err := ValidateLimit("limits[x]", Limit{ID: "x", Key: "ip+net", Algorithm: "token_bucket", Rate: "10/1m", OnStoreFailure: "open", Mode: "enforce"})
	if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "limits[x].key" {
		t.Errorf("ValidateLimit(key ip+net) = %v, want an error naming limits[x].key", err)
	}
}
