package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
	"boxoffice.dev/services/catalog"
	"boxoffice.dev/services/search"
)

// status is the status code of GET url, 0 when the request fails.
func status(url string) int {
	res, err := http.Get(url)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestEndToEnd runs catalog and search in-process: search waits unready for a catalog that
// is not there yet, builds its index once it is, and follows catalog changes within a second.
func TestEndToEnd(t *testing.T) {
	natsURL := testkit.StartNATS(t).ClientURL()
	catalogGRPC := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	srch := testkit.RunProcess(t, search.Run, map[string]string{"NATS_URL": natsURL, "CATALOG_GRPC_ADDR": catalogGRPC})
	if got := status(srch.HTTPURL + "/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("search /readyz without a catalog = %d, want 503", got)
	}

	cat := testkit.RunProcess(t, catalog.Run, map[string]string{"NATS_URL": natsURL, "SEED_DEMO": "true", "GRPC_ADDR": catalogGRPC})
	testkit.Eventually(t, 15*time.Second, "search ready", srch.Ready)

	// A venue spelt without accents, to search for it with them.
	post(t, cat.HTTPURL+"/v1/admin/venues", `{"id":"ven-sp-plain","name":"Galpao","city":"Sao Paulo","country":"BR","capacity":300}`)
	post(t, cat.HTTPURL+"/v1/admin/events", `{"id":"evt-plain","title":"Quarteto de Cordas","venue_id":"ven-sp-plain",
		"starts_at":"2031-02-01T20:00:00Z","on_sale_at":"2031-01-01T10:00:00Z",
		"ticket_classes":[{"id":"ga","name":"Pista","price":{"currency":"BRL","minor":5000},"capacity":300}]}`)

	t.Run("accents either way", func(t *testing.T) {
		testkit.Eventually(t, 5*time.Second, "the new event indexed", func() bool { return len(find(t, srch, "quarteto", "")) == 1 })
		tests := []struct {
			name, q, city string
			wantCity      string // a city some hit must be in
		}{
			{"sao paulo finds São Paulo", "sao paulo", "", "São Paulo"},
			{"São Paulo finds Sao Paulo", "São Paulo", "", "Sao Paulo"},
			{"city filter sao paulo finds São Paulo", "", "sao paulo", "São Paulo"},
			{"city filter São Paulo finds Sao Paulo", "cordas", "SÃO PAULO", "Sao Paulo"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				hits := find(t, srch, tt.q, tt.city)
				if !containsCity(hits, tt.wantCity) {
					t.Errorf("search q=%q city=%q = %v, want a hit in %q", tt.q, tt.city, hits, tt.wantCity)
				}
			})
		}
	})

	t.Run("a catalog change shows within a second", func(t *testing.T) {
		if hits := find(t, srch, "zebrafish", ""); len(hits) != 0 {
			t.Fatalf("zebrafish found before the change: %v", hits)
		}
		req, _ := http.NewRequest(http.MethodPatch, cat.HTTPURL+"/v1/admin/events/evt-005", strings.NewReader(`{"title":"Zebrafish Quintessence"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("PATCH evt-005 = %v, %v", res, err)
		}
		res.Body.Close()
		testkit.Eventually(t, time.Second, "search finds the new title", func() bool {
			hits := find(t, srch, "zebrafish quint", "")
			return len(hits) == 1 && hits[0] == "evt-005 São Paulo"
		})
	})

	t.Run("grpc", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := searchv1.NewSearchClient(srch.Dial(t)).Search(ctx, &searchv1.SearchRequest{Query: "fado", City: "lisboa", Limit: 2})
		if err != nil {
			t.Fatalf("Search: %v", err)
		}
		if len(res.GetHits()) != 2 || res.GetTotal() != 6 || len(res.GetFacets().GetCity()) != 1 || res.GetFacets().GetCity()[0].GetValue() != "Lisboa" {
			t.Errorf("Search(fado, lisboa) = %v, want 2 of 6 hits, all in Lisboa", res)
		}
	})
}

// find searches over REST and returns "id city" of each hit.
func find(t *testing.T, p *testkit.Process, q, city string) []string {
	t.Helper()
	res, err := http.Get(p.HTTPURL + "/v1/search?q=" + url.QueryEscape(q) + "&city=" + url.QueryEscape(city))
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	defer res.Body.Close()
	var body struct {
		Hits []search.Hit `json:"hits"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&body) != nil {
		t.Fatalf("search q=%q city=%q = %d", q, city, res.StatusCode)
	}
	var out []string
	for _, h := range body.Hits {
		out = append(out, h.ID+" "+h.City)
	}
	return out
}

func containsCity(hits []string, city string) bool {
	for _, h := range hits {
		if strings.HasSuffix(h, " "+city) {
			return true
		}
	}
	return false
}

func post(t *testing.T, url, body string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("POST %s = %d %s, want 201", url, res.StatusCode, b)
	}
}
