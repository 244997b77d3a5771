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
// decoded path ("path"), query parameter names or values (the parameter's name), or
// KeyHeaders (the header's name) are not valid UTF-8 or hold a control character; other
// requests go to next.
//
// These are what a handler passes to its store as ids, filters and keys, and PostgreSQL's
// text type refuses NUL and invalid UTF-8 as an internal error (SQLSTATE 22021): refusing
// them here, once, turns a 500 on one engine (and a quiet 200 or 404 on SQLite) into the
// same 400 on both, for every service. The path, parameter names and keys name things, so
// they get the strict rule (problem.CheckText). Query values get the free-text rule
// (problem.CheckFreeText), which allows tab, line feed and carriage return: a value may be
// free text, and a GraphQL query sent by GET (a BFF's persisted query, the first time) is
// written on several lines. A handler that takes an id from the query and must not see a
// line break checks it itself, as it checks the id's shape.
//
// net/http already refuses control characters in header values (except tab, which
// CheckText refuses here too) but lets through bytes 0x80 to 0xFF, invalid UTF-8 when they
// do not form characters. Among several bad query parameters the one named is the first in
// byte order, so the answer does not depend on map order.
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
