package search

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"boxoffice.dev/platform/problem"
)

// Index is an inverted index of event documents: for every term, the documents holding it
// and in which fields. The zero value is not usable; call NewIndex. It is safe for
// concurrent use: queries share a read lock, and a Put holds the write lock for one
// document's terms.
//
// A query word that may be a prefix is matched by scanning the vocabulary. For a catalog of
// thousands of events the vocabulary is tens of thousands of short strings, scanned in well
// under a millisecond; a sorted term list or a trie would make it logarithmic at the cost of
// upkeep on every Put.
type Index struct {
	mu       sync.RWMutex
	docs     map[string]*entry
	postings map[string]map[string]field // term → doc id → fields
}

type entry struct {
	doc     Doc
	terms   map[string]field
	cityKey string
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{docs: map[string]*entry{}, postings: map[string]map[string]field{}}
}

// Put adds d, or replaces the document with its id when d's version is higher, and reports
// whether it changed the index. Events may arrive twice or out of order (a rebuild racing
// the stream, a redelivery): the highest version wins whatever the order.
func (ix *Index) Put(d Doc) bool {
	e := &entry{doc: d, terms: d.terms(), cityKey: Fold(d.City)}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old, ok := ix.docs[d.ID]; ok {
		if old.doc.Version >= d.Version {
			return false
		}
		for t := range old.terms {
			delete(ix.postings[t], d.ID)
			if len(ix.postings[t]) == 0 {
				delete(ix.postings, t)
			}
		}
	}
	ix.docs[d.ID] = e
	for t, f := range e.terms {
		if ix.postings[t] == nil {
			ix.postings[t] = map[string]field{}
		}
		ix.postings[t][d.ID] = f
	}
	return true
}

// Len is the number of documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.docs)
}

// Query is a search: words to match, all of them (Text), and an exact city (City); both
// ignore case and accents. Limit 0 means 20.
type Query struct {
	Text  string
	City  string
	Limit int
}

const (
	defaultLimit = 20
	maxLimit     = 100
)

// Hit is a matching document and its score.
type Hit struct {
	Doc
	Score float64 `json:"score"`
}

// FacetValue counts the matches sharing one value.
type FacetValue struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// Facets count every match, not only the hits returned, by city (most first), by month of
// the start in UTC ("2026-07", in order) and by price band of the cheapest ticket.
type Facets struct {
	City  []FacetValue `json:"city"`
	Month []FacetValue `json:"month"`
	Price []FacetValue `json:"price"`
}

// Result is the best Limit matches, best first (ties: soonest, then by id), how many
// matched in all, and facets over all of them.
type Result struct {
	Hits   []Hit  `json:"hits"`
	Total  int    `json:"total"`
	Facets Facets `json:"facets"`
}

// Search runs q. Every word must match a term of the document, exactly or as a prefix (see
// minPrefix); a document scores the sum over words of its best field's weight. Without
// words every document in the city matches, soonest first.
func (ix *Index) Search(q Query) (Result, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = defaultLimit
	case limit < 0 || limit > maxLimit:
		return Result{}, problem.InvalidField("limit", "want 1 to %d", maxLimit)
	}
	words := Tokenize(q.Text)
	city := Fold(q.City)

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var scores map[string]float64
	if len(words) == 0 {
		scores = make(map[string]float64, len(ix.docs))
		for id := range ix.docs {
			scores[id] = 0
		}
	}
	for i, w := range words {
		matched := ix.match(w, len(w) >= minPrefix || i == len(words)-1)
		if scores == nil {
			scores = matched
			continue
		}
		for id, s := range scores {
			if m, ok := matched[id]; ok {
				scores[id] = s + m
			} else {
				delete(scores, id)
			}
		}
	}

	hits := make([]Hit, 0, len(scores))
	for id, score := range scores {
		e := ix.docs[id]
		if city != "" && e.cityKey != city {
			continue
		}
		hits = append(hits, Hit{Doc: e.doc, Score: score})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), a.StartsAt.Compare(b.StartsAt), strings.Compare(a.ID, b.ID))
	})
	res := Result{Total: len(hits), Facets: facets(hits)}
	res.Hits = hits[:min(limit, len(hits))]
	return res, nil
}

// match scores every document holding word, or with prefix a term starting with it.
func (ix *Index) match(word string, prefix bool) map[string]float64 {
	out := map[string]float64{}
	add := func(term string, factor float64) {
		for id, f := range ix.postings[term] {
			out[id] = max(out[id], factor*f.weight())
		}
	}
	add(word, 1)
	if prefix {
		for term := range ix.postings {
			if len(term) > len(word) && strings.HasPrefix(term, word) {
				add(term, prefixWeight)
			}
		}
	}
	return out
}

func facets(hits []Hit) Facets {
	cities := map[string]*FacetValue{} // by folded name; shown as first seen
	months := map[string]int{}
	prices := map[string]int{}
	for _, h := range hits {
		key := Fold(h.City)
		if cities[key] == nil {
			cities[key] = &FacetValue{Value: h.City}
		}
		cities[key].Count++
		months[h.StartsAt.UTC().Format("2006-01")]++
		prices[priceBand(h.MinPrice)]++
	}
	f := Facets{City: []FacetValue{}, Month: []FacetValue{}, Price: []FacetValue{}}
	for _, v := range cities {
		f.City = append(f.City, *v)
	}
	slices.SortFunc(f.City, func(a, b FacetValue) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Value, b.Value))
	})
	for m, n := range months {
		f.Month = append(f.Month, FacetValue{m, n})
	}
	slices.SortFunc(f.Month, func(a, b FacetValue) int { return strings.Compare(a.Value, b.Value) })
	for _, band := range priceBands {
		if n := prices[band]; n > 0 {
			f.Price = append(f.Price, FacetValue{band, n})
		}
	}
	return f
}
