package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/problem"
)

// jsonRequest is a POST of body labelled application/json.
func jsonRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// seatBody and holdBody stand for a service's request types: the names a decode error must
// not show a client.
type seatBody struct {
	ID  string `json:"id"`
	Row int8   `json:"row"`
}

type Audit struct {
	Note string `json:"note"`
}

type holdBody struct {
	Audit
	HoldID  string                `json:"hold_id"`
	Seats   []seatBody            `json:"seats"`
	StartAt time.Time             `json:"start_at"`
	Price   float32               `json:"price"`
	Count   uint                  `json:"count"`
	Labels  map[string]int        `json:"labels"`
	ByRow   map[int]string        `json:"by_row"`
	Raw     json.RawMessage       `json:"raw"`
	Blob    []byte                `json:"blob"`
	Flag    bool                  `json:"flag"`
	Any     any                   `json:"any"`
	Pair    [1]int                `json:"pair"`
	Limit   *int                  `json:"limit"`
	Nested  map[string][]seatBody `json:"nested"`
}

// decodeCases are bodies DecodeJSON refuses, each with the field and message it answers
// with: the field as a JSON path, the message in JSON terms.
var decodeCases = []struct {
	name, in, field, message string
}{
	{"empty body", ``, "", "request body is empty: want an object"},
	{"white space only", " \r\n\t", "", "request body is empty: want an object"},
	{"an array at the top", `[]`, "", "request body: want an object, got an array"},
	{"a string at the top", `"x"`, "", "request body: want an object, got a string"},
	{"a number at the top", `12`, "", "request body: want an object, got a number"},
	{"wrong type in a field", `{"hold_id":1}`, "hold_id", "want a string, got a number"},
	{"wrong type in a list item", `{"seats":[{"id":"a"},{"id":"b"},{"id":3}]}`, "seats[2].id", "want a string, got a number"},
	{"an object for a list", `{"seats":{"id":"a"}}`, "seats", "want an array, got an object"},
	{"a list for an object", `{"labels":[]}`, "labels", "want an object, got an array"},
	{"wrong type in a map value", `{"labels":{"vip":"x"}}`, "labels.vip", "want a whole number, got a string"},
	{"a map key that is no number", `{"by_row":{"x":"a"}}`, "by_row.x", "want a key that is a whole number"},
	{"wrong type under a map of lists", `{"nested":{"k":[{"id":true}]}}`, "nested.k[0].id", "want a string, got a boolean"},
	{"a string for a boolean", `{"flag":"yes"}`, "flag", "want true or false, got a string"},
	{"a promoted field", `{"note":5}`, "note", "want a string, got a number"},
	{"a pointer field", `{"limit":"ten"}`, "limit", "want a whole number, got a string"},
	{"a number out of range", `{"seats":[{"id":"a","row":300}]}`, "seats[0].row", "want a whole number from -128 to 127"},
	{"a fraction for a whole number", `{"seats":[{"id":"a","row":1.5}]}`, "seats[0].row", "want a whole number, without a fraction or an exponent"},
	{"a negative count", `{"count":-1}`, "count", "want a whole number from 0 to 18446744073709551615"},
	{"a float out of range", `{"price":1e39}`, "price", "want a number from -3.4e38 to 3.4e38"},
	{"a time that is no time", `{"start_at":"tomorrow"}`, "start_at", "want a date and time such as 2026-05-01T20:00:00Z (RFC 3339)"},
	{"bytes that are no base64", `{"blob":"!!"}`, "blob", "want a base64 string"},
	{"unknown field", `{"hold_id":"h1","colour":"red"}`, "colour", "unknown field"},
	{"unknown field in a list item", `{"seats":[{"id":"a"},{"id":"b","colour":"red"}]}`, "seats[1].colour", "unknown field"},
	{"a long unknown key is cut", `{"` + strings.Repeat("k", 100) + `":1}`, strings.Repeat("k", 64) + "…", "unknown field"},
	{"syntax error", `{"hold_id":"a",}`, "", "request body is not valid JSON at byte 16"},
	{"not JSON at all", `hold_id=a`, "", "request body is not valid JSON at byte 1"},
	{"cut short", `{"hold_id":"a"`, "", "request body is not valid JSON: it ends in the middle of a value"},
	{"trailing data", `{"hold_id":"a"} {}`, "", "request body has data after the JSON value, at byte 17"},
	{"a stray closing brace", `{"hold_id":"a"}}`, "", "request body has data after the JSON value, at byte 16"},
	{"a stray closing bracket", `{"hold_id":"a"}]`, "", "request body has data after the JSON value, at byte 16"},
	{"a repeated key", `{"hold_id":"a","hold_id":"b"}`, "hold_id", "appears twice in one object; send each key once"},
	{"a repeated key in a list item", `{"seats":[{"id":"a"},{"id":"b","row":1,"id":"c"}]}`, "seats[1].id", "appears twice in one object; send each key once"},
	{"a repeated key written with an escape", `{"labels":{"a":1,"\u0061":2}}`, "labels.a", "appears twice in one object; send each key once"},
	{"a repeated key inside any", `{"any":{"list":[1,{"b":1,"b":2}]}}`, "any.list[1].b", "appears twice in one object; send each key once"},
	{"a repeated key in a raw message", `{"raw":{"x":1,"x":2}}`, "raw.x", "appears twice in one object; send each key once"},
}

func TestDecodeJSONNamesTheFieldInJSONTerms(t *testing.T) {
	for _, tt := range decodeCases {
		t.Run(tt.name, func(t *testing.T) {
			var b holdBody
			err := DecodeJSON(jsonRequest(tt.in), &b)
			pe, ok := errors.AsType[*problem.Error](err)
			if !ok || pe.Code != problem.Invalid || pe.Field != tt.field || pe.Message != tt.message {
				t.Errorf("DecodeJSON(%.80s) = %v, want invalid, field %q, message %q", tt.in, err, tt.field, tt.message)
			}
		})
	}
}

func TestDecodeJSONAcceptsWhatEncodingJSONDoes(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"hold_id":"h1","seats":[{"id":"A-1","row":-128}],"start_at":"2026-05-01T20:00:00Z","price":1.5,"count":3}`,
		`{"HOLD_ID":"h1"}`, // encoding/json matches field names regardless of case
		`{"labels":{"a":1,"A":2},"by_row":{"-3":"x"},"raw":{"any":[1,2]},"blob":"aGk=","flag":false,"any":{"a":1}}`,
		`{"pair":[1,"extra elements are dropped"],"limit":null,"start_at":null,"seats":null}`,
		"\n\t{\"hold_id\":\"h1\"}\r\n ",
	} {
		var b holdBody
		if err := DecodeJSON(jsonRequest(in), &b); err != nil {
			t.Errorf("DecodeJSON(%s) = %v, want nil", in, err)
		}
	}
}

func TestDecodeJSONWantsJSONMediaType(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		wantCode                problem.Code // "" = decoded
		wantMessage             string
	}{
		{"application/json", "application/json", `{}`, "", ""},
		{"with a charset", "application/json; charset=utf-8", `{}`, "", ""},
		{"in capitals", "Application/JSON", `{}`, "", ""},
		{"a +json type", "application/merge-patch+json", `{}`, "", ""},
		{"problem+json", "application/problem+json", `{}`, "", ""},
		{"no content type", "", `{}`, problem.UnsupportedMediaType, "want application/json (or a type ending in +json); the request names none"},
		{"text/plain", "text/plain", `{}`, problem.UnsupportedMediaType, "want application/json (or a type ending in +json), not text/plain"},
		{"text/plain with a charset", "text/plain; charset=utf-8", `{}`, problem.UnsupportedMediaType, "want application/json (or a type ending in +json), not text/plain"},
		{"curl's default for -d", "application/x-www-form-urlencoded", `{}`, problem.UnsupportedMediaType, "want application/json (or a type ending in +json), not application/x-www-form-urlencoded"},
		{"json outside application", "text/json", `{}`, problem.UnsupportedMediaType, "want application/json (or a type ending in +json), not text/json"},
		{"not a media type", "/", `{}`, problem.UnsupportedMediaType, "want application/json (or a type ending in +json); the request's is not a media type"},
		{"no body needs no type", "", ``, problem.Invalid, "request body is empty: want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			var b holdBody
			err := DecodeJSON(r, &b)
			if tt.wantCode == "" {
				if err != nil {
					t.Errorf("DecodeJSON with Content-Type %q = %v, want nil", tt.contentType, err)
				}
				return
			}
			pe, ok := errors.AsType[*problem.Error](err)
			if !ok || pe.Code != tt.wantCode || pe.Message != tt.wantMessage {
				t.Errorf("DecodeJSON with Content-Type %q = %v, want %s %q", tt.contentType, err, tt.wantCode, tt.wantMessage)
			}
			if ok && pe.Code == problem.UnsupportedMediaType && pe.Field != "Content-Type" {
				t.Errorf("field = %q, want Content-Type", pe.Field)
			}
		})
	}
}

// A chunked body has no length, and still must say what it is.
func TestDecodeJSONChecksTheTypeOfAChunkedBody(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(strings.NewReader(`{}`)))
	r.ContentLength = -1
	r.Header.Set("Content-Type", "text/plain")
	var b holdBody
	if err := DecodeJSON(r, &b); problem.CodeOf(err) != problem.UnsupportedMediaType {
		t.Errorf("DecodeJSON(chunked text/plain) = %v, want unsupported_media_type", err)
	}
}

func TestDuplicateKey(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{`)
	for i := range 40 {
		many.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
	}
	tests := []struct {
		name, in, path string // path "" = no repeated key
	}{
		{"none", `{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, ""},
		{"same key in sibling objects", `[{"a":1},{"a":2}]`, ""},
		{"top level", `{"a":1,"b":2,"a":3}`, "a"},
		{"nested object", `{"a":{"b":1,"b":2}}`, "a.b"},
		{"in a list", `[0,[{"x":1}],{"y":1,"y":2}]`, "[2].y"},
		{"keys differing in case are two keys", `{"a":1,"A":2}`, ""},
		{"escaped quote in a key", `{"a\"b":1,"a\"b":2}`, `a"b`},
		{"escape against plain", `{"é":1,"\u00e9":2}`, "é"},
		{"strings holding braces", `{"a":"}{\"a\":","b":"]"}`, ""},
		{"many keys, none repeated", many.String() + `"end":1}`, ""},
		{"many keys, the last repeated", many.String() + `"kxxx":2}`, "kxxx"},
		{"white space everywhere", " { \"a\" : [ 1 , { \"b\" : 1 , \"b\" : 2 } ] } ", "a[1].b"},
		{"scalars", `"a"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.in)) {
				t.Fatalf("test input %s is not valid JSON", tt.in)
			}
			path, dup := duplicateKey([]byte(tt.in))
			if dup != (tt.path != "") || path != tt.path {
				t.Errorf("duplicateKey(%.60s) = %q, %v, want %q", tt.in, path, dup, tt.path)
			}
		})
	}
}

// goTypeName matches a package-qualified Go name ("inventory.holdBody", "problem.Audit"),
// to be looked for in a message, where field paths never are (Details.Field holds them).
var goTypeName = regexp.MustCompile(`\b[a-z]+\.[a-zA-Z][A-Za-z]+\b`)

// No answer to a bad body names a Go type or repeats the body, whatever is wrong with it.
func TestDecodeJSONAnswersNeitherGoTypesNorTheBody(t *testing.T) {
	const marker = "ZEBRA-7731"
	bodies := []string{
		`{"hold_id":["` + marker + `"]}`,
		`{"seats":[{"id":"` + marker + `","row":"` + marker + `"}]}`,
		`{"start_at":"` + marker + `"}`,
		`{"limit":"` + marker + `"}`,
		`{"blob":"` + marker + `!"}`,
		`{"by_row":{"` + marker + `":"x"}}`,
		`["` + marker + `"]`,
		`"` + marker + `"`,
		`{"hold_id":"` + marker + `",}`,
		`{"hold_id":"` + marker + `"} "` + marker + `"`,
		`{"hold_id":"` + marker + `"`,
		marker,
		`{"any":{"` + marker + `":1,"` + marker + `":2}}`,
	}
	for _, tt := range decodeCases {
		bodies = append(bodies, tt.in)
	}
	for _, body := range bodies {
		var b holdBody
		err := DecodeJSON(jsonRequest(body), &b)
		if err == nil {
			t.Errorf("DecodeJSON(%s) = nil, want an error", body)
			continue
		}
		rec := httptest.NewRecorder()
		problem.Write(rec, httptest.NewRequest(http.MethodPost, "/v1/holds", nil), nil, err)
		var d problem.Details
		if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
			t.Fatalf("answer %s: %v", rec.Body, err)
		}
		answer := rec.Body.String()
		for _, leak := range []string{"struct {", "holdBody", "seatBody", "Audit", "json:", "int8", "float32", "uint", "time.Time", "RawMessage", "[]", "map["} {
			if strings.Contains(answer, leak) {
				t.Errorf("DecodeJSON(%s) answers %s, which shows %q", body, answer, leak)
			}
		}
		if m := goTypeName.FindString(d.Detail); m != "" {
			t.Errorf("DecodeJSON(%s) answers detail %q, which names %q", body, d.Detail, m)
		}
		if strings.Contains(d.Detail, marker) || len(body) > 8 && strings.Contains(answer, body) {
			t.Errorf("DecodeJSON(%s) answers %s, which repeats the body", body, answer)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	type body struct {
		Seats int `json:"seats"`
	}
	tests := []struct {
		name, in, wantField string
		wantErr             bool
	}{
		{"ok", `{"seats":2}`, "", false},
		{"wrong type names field", `{"seats":"two"}`, "seats", true},
		{"unknown field names it", `{"seats":2,"price":1}`, "price", true},
		{"trailing data", `{"seats":2}{}`, "", true},
		{"a stray closing brace", `{"seats":2}}`, "", true},
		{"a stray closing bracket", `{"seats":2}]`, "", true},
		{"trailing white space", "{\"seats\":2}\n\t ", "", false},
		{"not json", `seats=2`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b body
			err := DecodeJSON(jsonRequest(tt.in), &b)
			if (err != nil) != tt.wantErr {
				t.Fatalf("DecodeJSON(%s) = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				if problem.CodeOf(err) != problem.Invalid {
					t.Errorf("CodeOf = %v, want invalid", problem.CodeOf(err))
				}
				var pe *problem.Error
				errors.As(err, &pe)
				if pe.Field != tt.wantField {
					t.Errorf("Field = %q, want %q", pe.Field, tt.wantField)
				}
			}
		})
	}
}
