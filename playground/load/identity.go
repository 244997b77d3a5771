package load

import (
	"fmt"
	"net/http"
)

// Identity is who a simulated client is, as the gateway sees it: a client IP (sent in
// X-Forwarded-For, which the gateway believes only from a trusted proxy — the playground is
// one in the local set-up), a user's access token, a partner's API key. Empty fields are not
// sent.
type Identity struct {
	Name   string // for people: fan0001, 10.1.0.7, acme
	IP     string
	Token  string
	APIKey string
}

// Apply sets the identity's headers on req.
func (id Identity) Apply(req *http.Request) {
	if id.IP != "" {
		req.Header.Set("X-Forwarded-For", id.IP)
	}
	if id.Token != "" {
		req.Header.Set("Authorization", "Bearer "+id.Token)
	}
	if id.APIKey != "" {
		req.Header.Set("X-Api-Key", id.APIKey)
	}
}

// FakeIP returns the n-th address of 10.0.0.0/8 (n from 0), skipping .0 and .255: documentation-
// style client addresses that never leave the machine — they only ever appear in a header.
func FakeIP(n int) string {
	n %= 1 << 24
	host := n%254 + 1
	n /= 254
	return fmt.Sprintf("10.%d.%d.%d", (n/256)%256, n%256, host)
}
