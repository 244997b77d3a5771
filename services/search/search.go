// Package search is BoxOffice's search: an in-memory full-text index of events, a read
// model (CQRS) of the catalog. On start it rebuilds the index by paging through the
// catalog's gRPC ListEvents, and it follows the catalog's change events on JetStream with a
// durable consumer, so a change shows in results within a second. If that consumer has to
// be set up again while search runs, the index is rebuilt the same way. Queries ignore case and
// accents: "são paulo" finds "Sao Paulo" and the other way round.
//
// This file holds the documents and the text rules; index.go the index. Neither does I/O.
package search

import (
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"boxoffice.dev/platform/money"
)

// Doc is an event as the index keeps it: what a result card shows and what queries match.
type Doc struct {
	ID          string      `json:"id"`
	Title       string      `json:"title"`
	Description string      `json:"-"` // matched, not shown
	Performers  []string    `json:"performers"`
	VenueID     string      `json:"venue_id"`
	City        string      `json:"city"`
	Country     string      `json:"country"`
	StartsAt    time.Time   `json:"starts_at"`
	MinPrice    money.Money `json:"min_price"`
	ImageURL    string      `json:"image_url"`
	FlashSale   bool        `json:"flash_sale"`
	Tags        []string    `json:"tags"`
	// Version is the catalog's; the index keeps the highest it has seen of each event.
	Version int64 `json:"-"`
}

// field is where in a document a term occurs, as a bit set.
type field uint8

const (
	inTitle field = 1 << iota
	inPerformers
	inTags
	inCity
	inDescription
)

// weights rank where a word matched: a title hit above a performer's name, above a tag,
// above the city, above the description. A document's score for a query word is the weight
// of its best field, so a word repeated in a long description does not outrank the title.
var weights = []struct {
	field  field
	weight float64
}{
	{inTitle, 10}, {inPerformers, 6}, {inTags, 4}, {inCity, 3}, {inDescription, 1},
}

func (f field) weight() float64 {
	for _, w := range weights {
		if f&w.field != 0 {
			return w.weight
		}
	}
	return 0
}

// prefixWeight discounts a prefix match against an exact one: "lumin" finds "lumineers",
// but "lumineers" itself ranks above.
const prefixWeight = 0.5

// minPrefix is the length from which any query word also matches as a prefix; shorter ones
// do only as the last word, the one being typed.
const minPrefix = 3

// terms returns the document's terms and the fields each occurs in.
func (d Doc) terms() map[string]field {
	out := map[string]field{}
	add := func(f field, texts ...string) {
		for _, text := range texts {
			for _, t := range Tokenize(text) {
				out[t] |= f
			}
		}
	}
	add(inTitle, d.Title)
	add(inPerformers, d.Performers...)
	add(inTags, d.Tags...)
	add(inCity, d.City)
	add(inDescription, d.Description)
	return out
}

// spellOut writes out letters that have no decomposition into a base letter and a mark.
var spellOut = strings.NewReplacer("ß", "ss", "æ", "ae", "ø", "o", "œ", "oe", "ł", "l")

// Fold returns s in the form text is compared in: lower case, without accents. NFD splits
// "ã" into "a" and a combining tilde, the filter drops combining marks (category Mn), NFC
// puts back what remains; letters such as ß, which do not decompose, are spelt out.
func Fold(s string) string {
	// A chain keeps state between calls, so each call makes its own.
	fold := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	folded, _, err := transform.String(fold, strings.ToLower(s))
	if err != nil {
		folded = strings.ToLower(s) // only on invalid UTF-8; matching then degrades, never fails
	}
	return spellOut.Replace(folded)
}

// Tokenize splits s into folded words: runs of letters and digits. "Forró-do-Sertão 2026!"
// gives forro, do, sertao, 2026.
func Tokenize(s string) []string {
	return strings.FieldsFunc(Fold(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// priceBand names the facet band of a price in major units; bands are the same in every
// currency, a simplification a single-currency deployment would not notice.
func priceBand(m money.Money) string {
	switch major := m.Minor / 100; {
	case major < 50:
		return "0-50"
	case major < 100:
		return "50-100"
	case major < 200:
		return "100-200"
	}
	return "200+"
}

var priceBands = []string{"0-50", "50-100", "100-200", "200+"}
