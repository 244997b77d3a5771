package catalog_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	"boxoffice.dev/services/catalog"
)

// TestBadTextIsRefusedOnEveryEngine sends the catalog NUL bytes and invalid UTF-8 in each
// place a client can put them: the path, a query value, a cursor, a JSON string and a gRPC
// string. PostgreSQL's text type refuses both (SQLSTATE 22021), so without the platform's
// checks these were 500s on PostgreSQL and 200s or 404s on SQLite; they must be the same
// 400 naming the field on both.
func TestBadTextIsRefusedOnEveryEngine(t *testing.T) {
	title := func(title, class string) string {
		return strings.NewReplacer(`"Fado à Tarde"`, title, `"Geral"`, class).Replace(newEvent("evt-bad-text", "ven-lis-01"))
	}
	cursor := base64.RawURLEncoding.EncodeToString([]byte("100:a\x00b"))
	tests := []struct {
		name, method, path, body, field string
	}{
		{"NUL in a query value", "GET", "/v1/events?q=a%00b", "", "q"},
		{"NUL as a whole filter", "GET", "/v1/events?city=%00", "", "city"},
		{"invalid UTF-8 in a filter", "GET", "/v1/events?tag=%FF", "", "tag"},
		{"NUL in an event id", "GET", "/v1/events/evt%00", "", "path"},
		{"invalid UTF-8 in an event id", "GET", "/v1/events/%FF", "", "path"},
		{"NUL in a venue id", "GET", "/v1/venues/v%00", "", "path"},
		{"NUL in a cursor", "GET", "/v1/events?cursor=" + cursor, "", "cursor"},
		{"NUL in a title", "POST", "/v1/admin/events", title(`"a\u0000b"`, `"Geral"`), "title"},
		{"NUL in a ticket class name", "POST", "/v1/admin/events", title(`"Fado"`, `"G\u0000"`), "ticket_classes[0].name"},
		{"NUL in a patched title", "PATCH", "/v1/admin/events/" + catalog.DemoFlashSaleID, `{"title":"\u0000"}`, "title"},
	}
	testkit.ForEachDatabaseURL(t, "catalog", func(t *testing.T, url string) {
		proc := testkit.RunProcess(t, catalog.Run, map[string]string{"SEED_DEMO": "true", "DATABASE_URL": url})
		testkit.Eventually(t, 15*time.Second, "catalog ready", proc.Ready)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var p struct{ Code, Field string }
				res := call(t, tt.method, proc.HTTPURL+tt.path, strings.NewReader(tt.body), http.StatusBadRequest, &p)
				if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || p.Code != "invalid" || p.Field != tt.field {
					t.Errorf("%s %s = %s %+v, want application/problem+json, invalid, field %q", tt.method, tt.path, ct, p, tt.field)
				}
			})
		}

		c := catalogv1.NewCatalogClient(proc.Dial(t))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		grpcTests := []struct {
			name string
			call func() error
			msg  string // the start of the InvalidArgument message: the field
		}{
			{"gRPC: NUL in an event id", func() error {
				_, err := c.GetEvent(ctx, &catalogv1.GetEventRequest{Id: "evt\x00"})
				return err
			}, "id: "},
			{"gRPC: NUL in a batch's second id", func() error {
				_, err := c.BatchGetEvents(ctx, &catalogv1.BatchGetEventsRequest{Ids: []string{catalog.DemoFlashSaleID, "\x00"}})
				return err
			}, "ids[1]: "},
			{"gRPC: NUL in a nested filter", func() error {
				_, err := c.ListEvents(ctx, &catalogv1.ListEventsRequest{
					Filter: &catalogv1.EventFilter{City: "a\x00"}, Page: &commonv1.PageRequest{PageSize: 5},
				})
				return err
			}, "filter.city: "},
		}
		for _, tt := range grpcTests {
			t.Run(tt.name, func(t *testing.T) {
				st := status.Convert(tt.call())
				if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), tt.msg) {
					t.Errorf("%s = %v %q, want InvalidArgument starting %q", tt.name, st.Code(), st.Message(), tt.msg)
				}
			})
		}
	})
}
