package search

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// TestSearchQueryBounds: a text over maxQueryBytes or maxQueryWords is refused on both
// transports, naming the field as each calls it; a text at the bounds is served.
func TestSearchQueryBounds(t *testing.T) {
	ix := testIndex()
	srv := httptest.NewServer(routes(nil, ix).Mux())
	defer srv.Close()
	grpcSrv := &grpcServer{index: ix}
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("jazz ", n)) }
	tests := []struct {
		name  string
		q     string
		valid bool
	}{
		{"16 words", words(maxQueryWords), true},
		{"17 words", words(maxQueryWords + 1), false},
		{"17 words run together", strings.Repeat("a-", maxQueryWords) + "a", false},
		{"256 bytes", strings.Repeat("j", maxQueryBytes), true},
		{"257 bytes, one word", strings.Repeat("j", maxQueryBytes+1), false},
		{"257 bytes of spaces around one word", "jazz" + strings.Repeat(" ", maxQueryBytes-3), false},
		{"15,000 words", strings.Repeat("abc ", 15000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := http.Get(srv.URL + "/v1/search?q=" + url.QueryEscape(tt.q))
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Field string }
			_ = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			wantStatus, wantField := http.StatusOK, ""
			if !tt.valid {
				wantStatus, wantField = http.StatusBadRequest, "q"
			}
			if res.StatusCode != wantStatus || body.Field != wantField {
				t.Errorf("GET /v1/search?q=(%d bytes) = %d field %q, want %d field %q", len(tt.q), res.StatusCode, body.Field, wantStatus, wantField)
			}

			_, err = grpcSrv.Search(context.Background(), &searchv1.SearchRequest{Query: tt.q})
			st := status.Convert(err)
			wantCode, wantPrefix := codes.OK, ""
			if !tt.valid {
				wantCode, wantPrefix = codes.InvalidArgument, "query: "
			}
			if st.Code() != wantCode || !strings.HasPrefix(st.Message(), wantPrefix) {
				t.Errorf("Search(query of %d bytes) = %v %q, want %v %q…", len(tt.q), st.Code(), st.Message(), wantCode, wantPrefix)
			}
		})
	}
}

func TestQueryWords(t *testing.T) {
	tests := []struct {
		in   string
		want []queryWord
	}{
		{"jazz jazz", []queryWord{{"jazz", true}}},
		{"Jazz JÁZZ spree jazz", []queryWord{{"jazz", true}, {"spree", true}}},
		{"techno n", []queryWord{{"techno", true}, {"n", true}}},
		{"n techno", []queryWord{{"n", false}, {"techno", true}}},
		{"n techno n", []queryWord{{"n", false}, {"techno", true}}}, // exact once: exact
		{"", []queryWord{}},
	}
	for _, tt := range tests {
		got, err := queryWords(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("queryWords(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestSearchLooksUpOnlyWhatCanMatch counts the words a query looks up: each distinct word
// once, and none after a word leaves no document matching every word so far.
func TestSearchLooksUpOnlyWhatCanMatch(t *testing.T) {
	ix := testIndex()
	var looked []string
	ix.onMatch = func(w string) { looked = append(looked, w) }
	tests := []struct {
		q    string
		want []string
	}{
		{"jazz spree", []string{"jazz", "spree"}},
		{"jazz jazz JAZZ", []string{"jazz"}},
		{"opera jazz spree", []string{"opera"}},
		{"jazz lumen spree samba", []string{"jazz", "lumen"}},
		{"zzzz " + strings.Repeat("jazz ", maxQueryWords-1), []string{"zzzz"}},
	}
	for _, tt := range tests {
		looked = nil
		res, err := ix.Search(Query{Text: tt.q})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(looked, tt.want) {
			t.Errorf("Search(%q) looked up %q, want %q (total %d)", tt.q, looked, tt.want, res.Total)
		}
	}
}

// TestPrefixMatchFollowsPuts: prefix matches find exactly the documents holding a term that
// starts with the word, as Puts add, replace and drop terms; the sorted vocabulary stays the
// keys of the postings.
func TestPrefixMatchFollowsPuts(t *testing.T) {
	ix := NewIndex()
	steps := []struct {
		name string
		put  Doc
		want map[string][]string // query → ids, sorted
	}{
		{"first", Doc{ID: "a", Title: "Lumineers Live", Version: 1}, map[string][]string{
			"lum": {"a"}, "lumineers": {"a"}, "lumen": nil, "liv": {"a"}, "l": {"a"},
		}},
		{"a second shares a term", Doc{ID: "b", Title: "Lumen Live", Version: 1}, map[string][]string{
			"lum": {"a", "b"}, "lume": {"b"}, "live": {"a", "b"}, "lumineers": {"a"},
		}},
		{"a replacement drops a term", Doc{ID: "a", Title: "Aurora Live", Version: 2}, map[string][]string{
			"lum": {"b"}, "lumineers": nil, "aur": {"a"}, "live": {"a", "b"}, "a": {"a"},
		}},
		{"a replacement drops a shared term", Doc{ID: "b", Title: "Lumen Lumens", Version: 2}, map[string][]string{
			"live": {"a"}, "lumen": {"b"}, "lumens": {"b"}, "lum": {"b"},
		}},
		{"a term dropped and put back at once", Doc{ID: "b", Title: "Lumens Zebra", Version: 3}, map[string][]string{
			"lumen": {"b"}, "lumens": {"b"}, "zeb": {"b"}, "z": {"b"},
		}},
		{"a stale version changes nothing", Doc{ID: "b", Title: "Other", Version: 1}, map[string][]string{
			"oth": nil, "zebra": {"b"},
		}},
	}
	for _, s := range steps {
		ix.Put(s.put)
		if want := slices.Sorted(maps.Keys(ix.postings)); !slices.Equal(ix.terms, want) {
			t.Fatalf("after %s: terms = %q, want %q", s.name, ix.terms, want)
		}
		for q, want := range s.want {
			res, err := ix.Search(Query{Text: q})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range res.Hits {
				got = append(got, h.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("after %s: Search(%q) = %v, want %v", s.name, q, got, want)
			}
		}
	}
}

// TestPrefixMatchEqualsScan: on a large random vocabulary, before and after replacements,
// matching a prefix by binary search scores the same documents as scanning every term.
func TestPrefixMatchEqualsScan(t *testing.T) {
	ix, _ := benchIndex(300)
	scan := func(word string) map[string]float64 {
		out := map[string]float64{}
		for term, docs := range ix.postings {
			factor := prefixWeight
			if term == word {
				factor = 1
			} else if !strings.HasPrefix(term, word) {
				continue
			}
			for id, f := range docs {
				out[id] = max(out[id], factor*f.weight())
			}
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		for _, term := range sample(ix.terms, 40) {
			for n := 1; n <= len(term); n++ {
				if got, want := ix.match(term[:n], true), scan(term[:n]); !maps.Equal(got, want) {
					t.Fatalf("%s: match(%q) = %d documents, want %d", when, term[:n], len(got), len(want))
				}
			}
		}
	}
	check("built")
	for i := range 100 {
		ix.Put(Doc{ID: "evt-" + strconv.Itoa(i), Title: "replaced " + strconv.Itoa(i), Version: 2})
	}
	check("after replacements")
}

// sample returns about n evenly spaced elements of s.
func sample(s []string, n int) []string {
	var out []string
	for i := 0; i < len(s); i += max(1, len(s)/n) {
		out = append(out, s[i])
	}
	return out
}
