package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"boxoffice.dev/platform/problem"
)

func TestDecodeJSONRefusesControlCharacters(t *testing.T) {
	type price struct {
		Currency string `json:"currency"`
	}
	type item struct {
		Name  string `json:"name"`
		Price *price `json:"price,omitempty"`
	}
	type Audit struct {
		Note string `json:"note"`
	}
	type body struct {
		Audit                         // promoted: "note"
		Title  string                 `json:"title"`
		Blurb  *string                `json:"blurb"`
		Items  []item                 `json:"items"`
		Labels map[string]string      `json:"labels"`
		Extra  map[string]any         `json:"extra"`
		Raw    json.RawMessage        `json:"raw"`
		Plain  string                 // no tag: encoding/json names it Plain
		Nested map[string][]item      `json:"nested"`
		Any    any                    `json:"any"`
		Skip   string                 `json:"-"`
		Fixed  [2]string              `json:"fixed"`
		Opts   map[string]interface{} `json:"opts,omitempty"`
		Event  string                 `json:"event_id"`
		Seats  []string               `json:"seat_ids"`
		ID     *string                `json:"id"`
		Email  string                 `json:"email"`
		Camel  string                 `json:"eventId"`
	}
	tests := []struct {
		name, in, field string // field "" = accepted
	}{
		{"clean", `{"title":"Rock in Rio","items":[{"name":"GA","price":{"currency":"BRL"}}]}`, ""},
		{"tabs and line breaks in free text", `{"title":"Line one\r\nline\ttwo"}`, ""},
		{"NUL in a raw message is not text yet", `{"raw":"a\u0000b"}`, ""},
		{"NUL in a field", `{"title":"a\u0000b"}`, "title"},
		{"escape in a pointer field", `{"blurb":"\u001b[31m"}`, "blurb"},
		{"NUL in a list item's field", `{"items":[{"name":"ok"},{"name":"ok"},{"name":"x\u0000"}]}`, "items[2].name"},
		{"NUL two levels down", `{"items":[{"name":"GA","price":{"currency":"BR\u0000"}}]}`, "items[0].price.currency"},
		{"NUL in a map value", `{"labels":{"vip":"\u0000"}}`, "labels.vip"},
		{"NUL in a map key", `{"labels":{"v\u0000":"x"}}`, "labels.v\x00"},
		{"NUL in a decoded any", `{"extra":{"tags":["a","b\u0000"]}}`, "extra.tags[1]"},
		{"NUL in a promoted field", `{"note":"\u0000"}`, "note"},
		{"NUL in an untagged field", `{"Plain":"\u0000"}`, "Plain"},
		{"NUL in a map of lists", `{"nested":{"k":[{"name":"\u0000"}]}}`, "nested.k[0].name"},
		{"NUL in a bare any", `{"any":"\u0000"}`, "any"},
		{"NUL in an array", `{"fixed":["a","\u0000"]}`, "fixed[1]"},
		{"DEL", `{"title":"a` + "\x7f" + `"}`, "title"},
		{"clean identifiers", `{"event_id":"evt-001","seat_ids":["A-1","A-2"],"id":"h1","email":"ana@example.com","eventId":"evt-2"}`, ""},
		{"tab in an id field", `{"event_id":"evt\t001"}`, "event_id"},
		{"line feed in a list of ids", `{"seat_ids":["A-1","A-2\n"]}`, "seat_ids[1]"},
		{"carriage return in a bare id", `{"id":"h1\r"}`, "id"},
		{"line feed in an email", `{"email":"ana@example.com\nBcc: x"}`, "email"},
		{"tab in a camelCase id", `{"eventId":"a\tb"}`, "eventId"},
		{"tab in an id under a decoded map", `{"extra":{"hold_id":"a\tb"}}`, "extra.hold_id"},
		{"tab in a map key stays free text", `{"labels":{"a\tb":"x"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b body
			err := DecodeJSON(jsonRequest(tt.in), &b)
			if tt.field == "" {
				if err != nil {
					t.Errorf("DecodeJSON(%s) = %v, want nil", tt.in, err)
				}
				return
			}
			if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Code != problem.Invalid || pe.Field != tt.field {
				t.Errorf("DecodeJSON(%s) = %v, want an invalid problem naming %q", tt.in, err, tt.field)
			}
		})
	}
}

// TestDecodeJSONIntoATopLevelString checks a value that is text itself: the problem names
// no field, as there is none.
func TestDecodeJSONIntoATopLevelString(t *testing.T) {
	var s string
	err := DecodeJSON(jsonRequest(`"\u0000"`), &s)
	if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Code != problem.Invalid || pe.Field != "" {
		t.Errorf("DecodeJSON(\"\\u0000\") = %v, want an invalid problem naming no field", err)
	}
}

func BenchmarkDecodeJSONCheck(b *testing.B) {
	type item struct {
		Name string `json:"name"`
		Qty  int    `json:"qty"`
	}
	type body struct {
		Title string `json:"title"`
		Items []item `json:"items"`
	}
	v := body{Title: "Rock in Rio, day one", Items: make([]item, 50)}
	for i := range v.Items {
		v.Items[i].Name = "ticket class with a long enough name"
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, bad, _ := badString(reflect.ValueOf(&v), false); bad {
			b.Fatal("clean value refused")
		}
	}
}
