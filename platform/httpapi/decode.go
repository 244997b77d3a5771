package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/textrule"
)

// DecodeJSON reads a JSON request body into v (a pointer), or returns a problem a client can
// act on: 415 for a body not labelled application/json (or +json), else 400 naming the field
// by its JSON path ("seats[2].id") and what it should hold, never a Go type or the body. It
// refuses unknown fields, trailing data, repeated keys and control characters in strings
// (tabs and line breaks too in identifiers). Why each: docs/architecture.md, "JSON in and out".
func DecodeJSON(r *http.Request, v any) error {
	// A length of -1 is a chunked body: one whose length is unknown, not one that is absent.
	if r.ContentLength != 0 {
		if err := checkMediaType(r.Header.Get("Content-Type")); err != nil {
			return err
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if maxErr, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return problem.New(problem.Invalid, "request body is larger than %d bytes", maxErr.Limit)
		}
		return &problem.Error{Code: problem.Invalid, Message: "request body could not be read", Err: err}
	}
	return decode(body, v)
}

// decode is DecodeJSON once the body is read.
func decode(body []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("decode json into %T: want a pointer", v)
	}
	if !json.Valid(body) {
		return syntaxProblem(body, t.Elem())
	}
	if path, dup := duplicateKey(body); dup {
		return at(path, "appears twice in one object; send each key once")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return mismatch(body, t.Elem(), err)
	}
	if field, bad, ident := badString(reflect.ValueOf(v), false); bad {
		if ident {
			return problem.InvalidField(field, textrule.Strict)
		}
		return problem.InvalidField(field, textrule.Free)
	}
	return nil
}

// checkMediaType returns nil when contentType names JSON: application/json or
// application/*+json (RFC 6839), with any parameters; else an UnsupportedMediaType problem
// naming the header and the type wanted.
func checkMediaType(contentType string) error {
	const want = "want application/json (or a type ending in +json)"
	if strings.TrimSpace(contentType) == "" {
		return &problem.Error{Code: problem.UnsupportedMediaType, Field: "Content-Type", Message: want + "; the request names none"}
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return &problem.Error{Code: problem.UnsupportedMediaType, Field: "Content-Type", Message: want + "; the request's is not a media type"}
	}
	if mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json") {
		return nil
	}
	// A media type is a token/token pair (no quotes, no control characters), safe to name
	// back; only its length is the client's to choose.
	if len(mt) > 64 {
		return &problem.Error{Code: problem.UnsupportedMediaType, Field: "Content-Type", Message: want}
	}
	return &problem.Error{Code: problem.UnsupportedMediaType, Field: "Content-Type", Message: want + ", not " + mt}
}

// syntaxProblem says why body, which json.Valid refused, is not one JSON value: empty, not
// JSON from some byte on, cut short, or followed by more data. Offsets count bytes from 1.
func syntaxProblem(body []byte, t reflect.Type) error {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return problem.New(problem.Invalid, "request body is empty: want %s", expect(t))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	err := dec.Decode(&raw)
	if err == nil {
		end := dec.InputOffset()
		next := end + int64(len(body[end:])-len(bytes.TrimLeft(body[end:], jsonSpace)))
		return problem.New(problem.Invalid, "request body has data after the JSON value, at byte %d", next+1)
	}
	if synErr, ok := errors.AsType[*json.SyntaxError](err); ok {
		return problem.New(problem.Invalid, "request body is not valid JSON at byte %d", synErr.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return problem.New(problem.Invalid, "request body is not valid JSON: it ends in the middle of a value")
	}
	return &problem.Error{Code: problem.Invalid, Message: "request body is not valid JSON", Err: err}
}

// jsonSpace is the white space JSON allows between tokens (RFC 8259, section 2).
const jsonSpace = " \t\r\n"

// at returns an Invalid problem about the value at path, or about the whole body when path
// is "" (the body is the value).
func at(path, format string, args ...any) *problem.Error {
	if path == "" {
		return problem.New(problem.Invalid, "request body: "+format, args...)
	}
	return problem.InvalidField(path, format, args...)
}
