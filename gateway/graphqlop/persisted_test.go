package graphqlop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"boxoffice.dev/platform/problem"
)

func jsonNumber(s string) json.Number { return json.Number(s) }

func hashOf(q string) string {
	s := sha256.Sum256([]byte(q))
	return hex.EncodeToString(s[:])
}

func TestPersisted(t *testing.T) {
	const q = `{ event(id: "e") { id } }`
	p := NewPersisted(2)

	only := Request{Hash: hashOf(q)}
	if err := p.Resolve(&only); !errors.Is(err, ErrNotPersisted) {
		t.Fatalf("an unknown hash = %v, want ErrNotPersisted", err)
	}
	both := Request{Query: q, Hash: hashOf(q)}
	if err := p.Resolve(&both); err != nil {
		t.Fatalf("hash and query = %v, want them learnt", err)
	}
	if err := p.Resolve(&only); err != nil || only.Query != q {
		t.Fatalf("the hash once learnt = %q, %v; want the query", only.Query, err)
	}

	wrong := Request{Query: `{ feed(first: 1000) { cards { id } } }`, Hash: hashOf(q)}
	var pe *problem.Error
	if err := p.Resolve(&wrong); !errors.As(err, &pe) || pe.Field != "extensions.persistedQuery.sha256Hash" {
		t.Fatalf("a query under another's hash = %v, want a 400 naming the hash", err)
	}

	// Two more queries push the least recently used one out.
	for _, other := range []string{`{ a }`, `{ b }`} {
		if err := p.Resolve(&Request{Query: other, Hash: hashOf(other)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Resolve(&Request{Hash: hashOf(q)}); !errors.Is(err, ErrNotPersisted) {
		t.Errorf("the oldest of three in a cache of two = %v, want it forgotten", err)
	}

	long := "{ " + strings.Repeat("a ", MaxPersistedBytes) + "}"
	_ = p.Resolve(&Request{Query: long, Hash: hashOf(long)})
	if err := p.Resolve(&Request{Hash: hashOf(long)}); !errors.Is(err, ErrNotPersisted) {
		t.Errorf("a query over %d bytes = %v, want it not kept", MaxPersistedBytes, err)
	}
}

func TestRequestExtensions(t *testing.T) {
	h := hashOf("{ a }")
	tests := []struct {
		name, body string
		wantHash   string
		wantField  string // "" for no error
	}{
		{"a hash", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + h + `"}}}`, h, ""},
		{"no extensions", `{"query":"{ a }"}`, "", ""},
		{"another version", `{"extensions":{"persistedQuery":{"version":2,"sha256Hash":"` + h + `"}}}`, "", "extensions.persistedQuery.version"},
		{"not a hash", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`, "", "extensions.persistedQuery.sha256Hash"},
		{"upper-case hex", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + strings.ToUpper(h) + `"}}}`, "", "extensions.persistedQuery.sha256Hash"},
		{"extensions not an object", `{"extensions":[1]}`, "", "extensions"},
		{"variables not an object", `{"query":"{ a }","variables":"x"}`, "", "variables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := FromJSON([]byte(tt.body))
			if tt.wantField != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Field != tt.wantField {
					t.Fatalf("FromJSON = %v, want an invalid %s", err, tt.wantField)
				}
				return
			}
			if err != nil || r.Hash != tt.wantHash {
				t.Errorf("FromJSON = %+v, %v; want hash %q", r, err, tt.wantHash)
			}
		})
	}

	q := url.Values{"extensions": {`{"persistedQuery":{"version":1,"sha256Hash":"` + h + `"}}`}, "variables": {`{"n":3}`}}
	r, err := FromURL(q)
	if err != nil || r.Hash != h || r.Variables["n"] != json.Number("3") {
		t.Errorf("FromURL = %+v, %v; want the hash and variables", r, err)
	}
}
