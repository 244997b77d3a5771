package httpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRefuseBadText(t *testing.T) {
	srv := httptest.NewServer(RefuseBadText(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "passed")
	})))
	defer srv.Close()
	tests := []struct {
		name, target string
		header       map[string]string
		field        string // "" = passed to the handler
	}{
		{"plain", "/v1/events/evt-1?q=rock&limit=5", nil, ""},
		{"non-ASCII, escaped", "/v1/venues/caf%C3%A9?city=S%C3%A3o+Paulo&q=%F0%9F%8E%AB", nil, ""},
		{"an empty value", "/v1/events?q=", nil, ""},
		{"an escaped slash", "/v1/events/a%2Fb", nil, ""},
		{"a good key", "/v1/orders", map[string]string{"Idempotency-Key": "order-é-1"}, ""},
		{"NUL in the path", "/v1/events/evt%00", nil, "path"},
		{"invalid UTF-8 in the path", "/v1/events/%FF/seats", nil, "path"},
		{"a line break in the path", "/v1/events/a%0Ab", nil, "path"},
		{"DEL in the path", "/v1/events/a%7Fb", nil, "path"},
		{"NUL in a query value", "/v1/events?q=a%00b", nil, "q"},
		{"NUL as a whole value", "/v1/events?city=%00", nil, "city"},
		{"invalid UTF-8 in a value", "/v1/admin/charges?order_id=%FF", nil, "order_id"},
		{"line breaks and a tab in a value: a GraphQL query by GET", "/graphql?query=query+E+%7B%0D%0A%09event%28id%3A+%22evt-1%22%29+%7B+title+%7D%0A%7D", nil, ""},
		{"an escape in a value", "/v1/events?q=a%1Bb", nil, "q"},
		{"a line break in a name", "/v1/events?a%0Ab=1", nil, "a\nb"},
		{"a bad second value", "/v1/events?q=ok&q=%00", nil, "q"},
		{"a bad name", "/v1/events?a%00b=1", nil, "a\x00b"},
		{"the first of two bad names in byte order", "/v1/events?z=%00&m=%FF&q=ok", nil, "m"},
		{"invalid UTF-8 in Idempotency-Key", "/v1/orders", map[string]string{"Idempotency-Key": "k\xff"}, "Idempotency-Key"},
		{"a tab in Idempotency-Key", "/v1/orders", map[string]string{"Idempotency-Key": "k\tk"}, "Idempotency-Key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+tt.target, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header[k] = []string{v} // as sent: Set would not refuse them either
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if tt.field == "" {
				if res.StatusCode != http.StatusOK || string(b) != "passed" {
					t.Errorf("GET %s = %d %q, want 200 passed", tt.target, res.StatusCode, b)
				}
				return
			}
			var p struct{ Code, Field string }
			if err := json.Unmarshal(b, &p); err != nil || res.StatusCode != http.StatusBadRequest ||
				res.Header.Get("Content-Type") != "application/problem+json" || p.Code != "invalid" || p.Field != tt.field {
				t.Errorf("GET %s = %d %s %s, want 400 application/problem+json, invalid, naming %q",
					tt.target, res.StatusCode, res.Header.Get("Content-Type"), b, tt.field)
			}
		})
	}
}
