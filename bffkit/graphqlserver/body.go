package graphqlserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

// checkBody refuses a POST whose body is no GraphQL request before gqlgen reads it, as
// application/problem+json (gqlgen's own answer names Go types and repeats the body): 415
// when it is not labelled application/json, 400 when it is not one JSON object, names a key
// twice, or holds a request member of the wrong kind (httpapi.DecodeJSON says what and where).
// Members other than the four of a GraphQL request pass, as gqlgen ignores them.
func checkBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		var body bytes.Buffer
		r.Body = io.NopCloser(io.TeeReader(r.Body, &body))
		var members map[string]json.RawMessage
		err := httpapi.DecodeJSON(r, &members)
		if err == nil {
			err = checkMembers(members)
		}
		if err != nil {
			problem.Write(w, r, nil, err)
			return
		}
		r.Body = io.NopCloser(&body)
		next.ServeHTTP(w, r)
	})
}

// requestMembers are the members of a GraphQL request (GraphQL over HTTP, section 5) and
// the kind each must be when it is not null.
var requestMembers = []struct {
	name string
	kind byte // the first byte of a value of that kind
	want string
}{
	{"query", '"', "a string"},
	{"operationName", '"', "a string"},
	{"variables", '{', "an object"},
	{"extensions", '{', "an object"},
}

// checkMembers returns an Invalid problem naming the first request member of members that
// is neither null nor of its kind.
func checkMembers(members map[string]json.RawMessage) error {
	for _, m := range requestMembers {
		v, ok := members[m.name]
		if !ok || string(v) == "null" || v[0] == m.kind {
			continue
		}
		return problem.InvalidField(m.name, "want %s, got %s", m.want, jsonKind(v[0]))
	}
	return nil
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(first byte) string {
	switch first {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
