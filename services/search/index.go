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
// document's terms. A prefix query binary-searches the sorted vocabulary, so it costs the
// terms it matches; the price is a Put that adds or removes terms shifting that sorted list.
type Index struct {
	mu       sync.RWMutex
	docs     map[string]*entry
	postings map[string]map[string]field // term → doc id → fields
	terms    []string                    // the keys of postings, sorted

	// onMatch, when set, is called with each query word the index looks up, so a test can
	// count the work a query does. Set it before the index is shared.
	onMatch func(word string)
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
	var dropped map[string]bool // terms of the old version no document holds any more
	if old, ok := ix.docs[d.ID]; ok {
		if old.doc.Version >= d.Version {
			return false
		}
		for t := range old.terms {
			delete(ix.postings[t], d.ID)
			if len(ix.postings[t]) == 0 {
				delete(ix.postings, t)
				if dropped == nil {
					dropped = map[string]bool{}
				}
				dropped[t] = true
			}
		}
	}
	ix.docs[d.ID] = e
	var added []string // terms new to the vocabulary
	for t, f := range e.terms {
		if ix.postings[t] == nil {
			ix.postings[t] = map[string]field{}
			if dropped[t] {
				delete(dropped, t) // back again: still in ix.terms
			} else {
				added = append(added, t)
			}
		}
		ix.postings[t][d.ID] = f
	}
	ix.updateTerms(dropped, added)
	return true
}

// updateTerms brings the sorted vocabulary in step with postings after a Put: it removes
// dropped, terms no document holds any more, and merges in added, terms not yet listed.
// Each is found by binary search and the runs between them move with copy, so a Put costs
// a few memory moves of the vocabulary, not a comparison or a hash of every term.
func (ix *Index) updateTerms(dropped map[string]bool, added []string) {
	if len(dropped) > 0 {
		at := make([]int, 0, len(dropped))
		for t := range dropped {
			i, _ := slices.BinarySearch(ix.terms, t)
			at = append(at, i)
		}
		slices.Sort(at)
		w := at[0]
		for k, i := range at {
			end := len(ix.terms)
			if k+1 < len(at) {
				end = at[k+1]
			}
			w += copy(ix.terms[w:], ix.terms[i+1:end])
		}
		clear(ix.terms[w:]) // let the dropped strings be collected
		ix.terms = ix.terms[:w]
	}
	if len(added) == 0 {
		return
	}
	slices.Sort(added)
	// Fill the grown slice from the back: each added term below the run of old terms greater
	// than it. ix.terms[:end] are the old terms not yet moved; the slots from k on are final.
	end := len(ix.terms)
	ix.terms = slices.Grow(ix.terms, len(added))[:end+len(added)]
	k := len(ix.terms)
	for j := len(added) - 1; j >= 0; j-- {
		i, _ := slices.BinarySearch(ix.terms[:end], added[j])
		k -= end - i
		copy(ix.terms[k:], ix.terms[i:end])
		end = i
		k--
		ix.terms[k] = added[j]
	}
}

// Len is the number of documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.docs)
}

// Query is a search: words to match, all of them (Text, at most maxQueryBytes and
// maxQueryWords), and an exact city (City); both ignore case and accents. Limit 0 means 20.
type Query struct {
	Text  string
	City  string
	Limit int
}

const (
	defaultLimit = 20
	maxLimit     = 100
)

// maxQueryBytes and maxQueryWords bound a query's text. A search box holds a few words, and
// each word is a lookup under the read lock, which a Put of a catalog change waits behind
// and every later search behind the Put: an unbounded text would let one request stall them
// all. Longer text is refused, not cut, so a caller never gets results for words it did not
// see matched.
const (
	maxQueryBytes = 256
	maxQueryWords = 16
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
// minPrefix); a document scores the sum over distinct words of its best field's weight.
// Without words every document in the city matches, soonest first. A text over the bounds
// is an Invalid error naming "q", as the HTTP API calls it.
func (ix *Index) Search(q Query) (Result, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = defaultLimit
	case limit < 0 || limit > maxLimit:
		return Result{}, problem.InvalidField("limit", "want 1 to %d", maxLimit)
	}
	words, err := queryWords(q.Text)
	if err != nil {
		return Result{}, err
	}
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
	for _, w := range words {
		matched := ix.match(w.text, w.prefix)
		if scores == nil {
			scores = matched
		} else {
			for id, s := range scores {
				if m, ok := matched[id]; ok {
					scores[id] = s + m
				} else {
					delete(scores, id)
				}
			}
		}
		if len(scores) == 0 {
			break // every word must match, and no document is left for the rest to
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

// queryWord is a word of a query, and whether it also matches as a prefix.
type queryWord struct {
	text   string
	prefix bool
}

// queryWords splits a query's text into its distinct words, in order, or refuses a text
// over the bounds. A word matches as a prefix when it has minPrefix letters or more, or is
// the last, the one being typed; a short word given twice is exact if either is not last.
func queryWords(text string) ([]queryWord, error) {
	if len(text) > maxQueryBytes {
		return nil, problem.InvalidField("q", "want at most %d bytes", maxQueryBytes)
	}
	tokens := Tokenize(text)
	if len(tokens) > maxQueryWords {
		return nil, problem.InvalidField("q", "want at most %d words", maxQueryWords)
	}
	out := make([]queryWord, 0, len(tokens))
	for i, t := range tokens {
		prefix := len(t) >= minPrefix || i == len(tokens)-1
		if k := slices.IndexFunc(out, func(w queryWord) bool { return w.text == t }); k >= 0 {
			out[k].prefix = out[k].prefix && prefix
			continue
		}
		out = append(out, queryWord{t, prefix})
	}
	return out, nil
}

// match scores every document holding word, or with prefix a term starting with it. The
// terms starting with word are one run of the sorted vocabulary, found by binary search.
func (ix *Index) match(word string, prefix bool) map[string]float64 {
	if ix.onMatch != nil {
		ix.onMatch(word)
	}
	out := map[string]float64{}
	add := func(term string, factor float64) {
		for id, f := range ix.postings[term] {
			out[id] = max(out[id], factor*f.weight())
		}
	}
	add(word, 1)
	if prefix {
		i, exact := slices.BinarySearch(ix.terms, word)
		if exact {
			i++ // word itself counted above, at full weight
		}
		for ; i < len(ix.terms) && strings.HasPrefix(ix.terms[i], word); i++ {
			add(ix.terms[i], prefixWeight)
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
