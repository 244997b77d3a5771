package httpserver

import (
	"net/http"

	"boxoffice.dev/platform/problem"
)

// KeyHeaders are the request headers a service reads as a key to store or look up, held to
// the rule of RefuseBadText like the path: Idempotency-Key (RFC draft
// ietf-httpapi-idempotency-key-header), which an order stores with the order it made.
var KeyHeaders = []string{"Idempotency-Key"}

// RefuseBadText answers 400, an Invalid problem naming the part at fault, to a request whose
// decoded path ("path"), query parameter names or values, or KeyHeaders break the text rule
// (package textrule says why); other requests go to next. Query values get the free-text rule,
// since a GraphQL query sent by GET spans lines: a handler taking an id from the query checks
// it itself. net/http lets bytes 0x80 to 0xFF through in header values. Among several bad
// parameters the first in byte order is named, so the answer does not depend on map order.
func RefuseBadText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkText(r); err != nil {
			problem.Write(w, r, nil, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkText returns the error RefuseBadText answers with, or nil.
func checkText(r *http.Request) error {
	if err := problem.CheckText("path", r.URL.Path); err != nil {
		return err
	}
	if r.URL.RawQuery != "" {
		var bad string
		var badErr error
		for name, values := range r.URL.Query() {
			if badErr != nil && name >= bad {
				continue
			}
			err := problem.CheckText(name, name)
			if err == nil {
				err = checkAll(problem.CheckFreeText, name, values)
			}
			if err != nil {
				bad, badErr = name, err
			}
		}
		if badErr != nil {
			return badErr
		}
	}
	for _, h := range KeyHeaders {
		if err := checkAll(problem.CheckText, h, r.Header.Values(h)); err != nil {
			return err
		}
	}
	return nil
}

// checkAll returns the error of the first of values check refuses, or nil.
func checkAll(check func(field, s string) error, field string, values []string) error {
	for _, v := range values {
		if err := check(field, v); err != nil {
			return err
		}
	}
	return nil
}
