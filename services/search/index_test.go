package search

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

var day = time.Date(2030, 7, 1, 20, 0, 0, 0, time.UTC)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"São Paulo", []string{"sao", "paulo"}},
		{"SAO  paulo", []string{"sao", "paulo"}},
		{"Forró-do-Sertão 2026!", []string{"forro", "do", "sertao", "2026"}},
		{"Jürgen Größ", []string{"jurgen", "gross"}},
		{"Özlem Şahin & Max", []string{"ozlem", "sahin", "max"}},
		{"  ", nil},
	}
	for _, tt := range tests {
		if got := Tokenize(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func testIndex() *Index {
	ix := NewIndex()
	for _, d := range []Doc{
		{ID: "a", Title: "Jazz na Vila", City: "São Paulo", StartsAt: day, MinPrice: money.Money{Currency: "BRL", Minor: 12000}, Version: 1},
		{ID: "b", Title: "Noite de Samba", Description: "Samba, choro e um pouco de jazz", City: "Sao Paulo", StartsAt: day.Add(time.Hour), MinPrice: money.Money{Currency: "BRL", Minor: 4000}, Version: 1},
		{ID: "c", Title: "The Lumineers Tribute", Performers: []string{"Lumen Band"}, City: "Lisboa", StartsAt: day.AddDate(0, 1, 0), MinPrice: money.Money{Currency: "EUR", Minor: 2500}, Version: 1},
		{ID: "d", Title: "Techno Nacht", Tags: []string{"electronic"}, City: "Berlin", StartsAt: day.AddDate(0, 0, 2), MinPrice: money.Money{Currency: "EUR", Minor: 30000}, Version: 1},
		{ID: "e", Title: "Jazz an der Spree", Performers: []string{"Jürgen Größ Trio"}, City: "Berlin", StartsAt: day.AddDate(0, 0, 1), MinPrice: money.Money{Currency: "EUR", Minor: 9000}, Version: 1},
	} {
		ix.Put(d)
	}
	return ix
}

func TestIndexSearch(t *testing.T) {
	ix := testIndex()
	tests := []struct {
		name string
		q    Query
		want []string // hit ids in rank order
	}{
		{"accents in the query", Query{Text: "são paulo"}, []string{"a", "b"}},
		{"accents in the document", Query{Text: "SAO PAULO"}, []string{"a", "b"}},
		{"city filter either way", Query{City: "sao paulo"}, []string{"a", "b"}},
		{"city filter with accents", Query{City: "São Paulo"}, []string{"a", "b"}},
		{"title above description", Query{Text: "jazz"}, []string{"a", "e", "b"}},
		{"every word must match", Query{Text: "jazz spree"}, []string{"e"}},
		{"prefix of 3+ letters", Query{Text: "lumin"}, []string{"c"}},
		{"exact above prefix", Query{Text: "lumen"}, []string{"c"}},
		{"short last word is a prefix", Query{Text: "techno n"}, []string{"d"}},
		{"short word before the last is exact", Query{Text: "n techno"}, nil},
		{"performer, ß spelt out", Query{Text: "gross"}, []string{"e"}},
		{"tag", Query{Text: "electronic"}, []string{"d"}},
		{"no words: the city, soonest first", Query{City: "berlin"}, []string{"e", "d"}},
		{"words and city", Query{Text: "jazz", City: "berlin"}, []string{"e"}},
		{"nothing", Query{Text: "opera"}, nil},
		{"limit", Query{Limit: 2}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ix.Search(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range res.Hits {
				got = append(got, h.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Search(%+v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestIndexFacets(t *testing.T) {
	res, err := testIndex().Search(Query{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := Facets{
		City:  []FacetValue{{"Berlin", 2}, {"São Paulo", 2}, {"Lisboa", 1}},
		Month: []FacetValue{{"2030-07", 4}, {"2030-08", 1}},
		Price: []FacetValue{{"0-50", 2}, {"50-100", 1}, {"100-200", 1}, {"200+", 1}},
	}
	if res.Total != 5 || len(res.Hits) != 1 || fmt.Sprint(res.Facets) != fmt.Sprint(want) {
		t.Errorf("Search(limit 1) = total %d, %d hits, facets %v; want 5, 1, %v", res.Total, len(res.Hits), res.Facets, want)
	}
}

func TestIndexSearchLimit(t *testing.T) {
	for _, limit := range []int{-1, maxLimit + 1} {
		if _, err := NewIndex().Search(Query{Limit: limit}); problem.CodeOf(err) != problem.Invalid {
			t.Errorf("Search(limit %d) = %v, want invalid limit", limit, err)
		}
	}
}

func TestIndexPutKeepsHighestVersion(t *testing.T) {
	ix := NewIndex()
	steps := []struct {
		doc     Doc
		applied bool
	}{
		{Doc{ID: "x", Title: "Old Title", Version: 2}, true},
		{Doc{ID: "x", Title: "Older Title", Version: 1}, false}, // late, out of order
		{Doc{ID: "x", Title: "Old Title", Version: 2}, false},   // redelivered
		{Doc{ID: "x", Title: "New Name", Version: 3}, true},
	}
	for _, s := range steps {
		if got := ix.Put(s.doc); got != s.applied {
			t.Errorf("Put(%q v%d) = %v, want %v", s.doc.Title, s.doc.Version, got, s.applied)
		}
	}
	for q, want := range map[string]int{"new name": 1, "title": 0, "old": 0, "older": 0} {
		res, _ := ix.Search(Query{Text: q})
		if res.Total != want {
			t.Errorf("Search(%q).Total = %d, want %d", q, res.Total, want)
		}
	}
	if ix.Len() != 1 {
		t.Errorf("Len() = %d, want 1", ix.Len())
	}
}

// Writers and readers at once: run with -race.
func TestIndexConcurrentUse(t *testing.T) {
	ix := testIndex()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for v := range 50 {
				ix.Put(Doc{ID: fmt.Sprintf("w%d", w), Title: fmt.Sprintf("Show %d", v), City: "Porto", Version: int64(v + 1)})
				if _, err := ix.Search(Query{Text: "show", City: "porto"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	res, _ := ix.Search(Query{Text: "49"})
	if res.Total != 4 {
		t.Errorf("after concurrent puts %d documents hold the last version, want 4", res.Total)
	}
}
