// Package assistant is BoxOffice's assistant: it answers questions about events ("what's on
// in São Paulo this weekend under 200?") by deterministic retrieval over the catalog, with
// no model weights. A question is parsed into an Intent (city, dates, price cap, genres),
// the catalog is asked for matching events over gRPC, and a templated answer lists them.
//
// Every answer costs tokens (see Tokens), reported in the X-Boxoffice-Tokens header so the
// gateway can charge a token-weighted quota: the assistant is the system's expensive route.
//
// This file parses questions; answer.go composes answers. Neither does I/O.
package assistant

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the cities' time zones, even without a zoneinfo database
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Intent is what a question asks for. Zero fields were not asked for.
type Intent struct {
	City     string    // as the catalog names it: "São Paulo", "Lisboa"
	From, To time.Time // events starting in [From, To); To zero = no end
	Period   string    // the dates in words: "this weekend", "in December"
	MaxPrice int64     // the cheapest ticket at most this, in minor units
	Tags     []string  // catalog tags, any of which matches
}

// city is a place the assistant recognises, under the name the catalog uses.
type city struct {
	name    string
	zone    string   // IANA time zone, for "today" and "this weekend" there
	aliases []string // folded spellings, as whole words
}

// cities is the gazetteer. Matching is on folded text, so "São Paulo", "sao paulo" and
// "SAO PAULO" are one; the catalog's city filter folds the same way.
var cities = []city{
	{"São Paulo", "America/Sao_Paulo", []string{"sao paulo", "sampa"}},
	{"Rio de Janeiro", "America/Sao_Paulo", []string{"rio de janeiro", "rio"}},
	{"Lisboa", "Europe/Lisbon", []string{"lisboa", "lisbon", "lissabon"}},
	{"Porto", "Europe/Lisbon", []string{"porto", "oporto"}},
	{"Berlin", "Europe/Berlin", []string{"berlin", "berlim"}},
}

// genres maps folded words of a question to catalog tags.
var genres = []struct {
	words []string
	tag   string
}{
	{[]string{"jazz"}, "jazz"},
	{[]string{"rock"}, "rock"},
	{[]string{"indie"}, "indie"},
	{[]string{"pop"}, "pop"},
	{[]string{"samba", "pagode"}, "samba"},
	{[]string{"bossa nova", "bossa"}, "bossa nova"},
	{[]string{"forro"}, "forró"},
	{[]string{"fado"}, "fado"},
	{[]string{"classical", "classic", "orchestra", "symphony", "chamber music"}, "classical"},
	{[]string{"opera"}, "opera"},
	{[]string{"techno", "electronic", "dj", "club", "rave"}, "electronic"},
	{[]string{"comedy", "stand-up", "stand up", "standup", "funny"}, "comedy"},
	{[]string{"theatre", "theater", "play", "drama"}, "theatre"},
	{[]string{"kids", "children", "family"}, "family"},
}

var months = map[string]time.Month{}

func init() {
	names := [][]string{ // English, Portuguese, German; folded
		{"january", "janeiro", "januar"}, {"february", "fevereiro", "februar"}, {"march", "marco", "marz"},
		{"april", "abril"}, {"may", "maio", "mai"}, {"june", "junho", "juni"}, {"july", "julho", "juli"},
		{"august", "agosto"}, {"september", "setembro"}, {"october", "outubro", "oktober"},
		{"november", "novembro"}, {"december", "dezembro", "dezember"},
	}
	for i, ns := range names {
		for _, n := range ns {
			months[n] = time.Month(i + 1)
		}
	}
}

var (
	// A month only counts after a preposition: "may" alone is more often a verb.
	monthRe   = regexp.MustCompile(`\b(?:in|em|im|during|for)\s+([a-z]+)\b`)
	weekdayRe = regexp.MustCompile(`\b(?:on\s+|this\s+|next\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b`)
	priceRe   = regexp.MustCompile(`\b(?:under|below|less than|cheaper than|up to|no more than|at most|max(?:imum)?|ate|menos de|abaixo de|unter|bis)\s*(?:r\$|€|\$|eur|brl|usd)?\s*(\d+(?:[.,]\d{1,2})?)`)
)

// Parse reads a question asked at now. Dates are taken in the time zone of the city asked
// about, or of now when there is none. Without dates the intent is "from now on".
func Parse(question string, now time.Time) Intent {
	q := " " + fold(question) + " "
	var in Intent
	loc := now.Location()
	for _, c := range cities {
		if contains(q, c.aliases...) {
			in.City = c.name
			loc = location(c.zone, loc)
			break
		}
	}
	in.From, in.To, in.Period = dates(q, now.In(loc))
	if m := priceRe.FindStringSubmatch(q); m != nil {
		in.MaxPrice, _ = minorUnits(m[1]) // too large to cap anything: no cap
	}
	for _, g := range genres {
		if contains(q, g.words...) {
			in.Tags = append(in.Tags, g.tag)
		}
	}
	return in
}

// dates finds the period a folded question asks about, relative to now (in the place's zone).
// The first rule that matches wins, most specific first.
func dates(q string, now time.Time) (from, to time.Time, period string) {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	day := func(n int) time.Time { return today.AddDate(0, 0, n) }
	// Weeks start on Monday; daysTo(d) counts days to the next d, 0 if today is d.
	daysTo := func(d time.Weekday) int { return (int(d) - int(now.Weekday()) + 7) % 7 }
	saturday := daysTo(time.Saturday)
	if now.Weekday() == time.Sunday {
		saturday = -1 // this weekend began yesterday
	}
	nextMonday := daysTo(time.Monday)
	if nextMonday == 0 {
		nextMonday = 7
	}
	firstOfMonth := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
	switch {
	case contains(q, "next weekend"):
		return day(saturday + 7), day(saturday + 9), "next weekend"
	case contains(q, "weekend", "fim de semana", "wochenende"):
		return later(day(saturday), now), day(saturday + 2), "this weekend"
	case contains(q, "tonight", "today", "hoje", "heute"):
		return now, day(1), "today"
	case contains(q, "tomorrow", "amanha", "morgen"):
		return day(1), day(2), "tomorrow"
	case contains(q, "next week"):
		return day(nextMonday), day(nextMonday + 7), "next week"
	case contains(q, "this week"):
		return now, day(nextMonday), "this week"
	case contains(q, "next month"):
		return firstOfMonth.AddDate(0, 1, 0), firstOfMonth.AddDate(0, 2, 0), "next month"
	case contains(q, "this month"):
		return now, firstOfMonth.AddDate(0, 1, 0), "this month"
	}
	for _, m := range monthRe.FindAllStringSubmatch(q, -1) {
		month, ok := months[m[1]]
		if !ok {
			continue
		}
		start := time.Date(now.Year(), month, 1, 0, 0, 0, 0, now.Location())
		if month < now.Month() {
			start = start.AddDate(1, 0, 0) // December asked in March is the coming December
		}
		return later(start, now), start.AddDate(0, 1, 0), "in " + month.String()
	}
	if m := weekdayRe.FindStringSubmatch(q); m != nil {
		for d := time.Sunday; d <= time.Saturday; d++ {
			if strings.ToLower(d.String()) == m[1] {
				n := daysTo(d)
				return later(day(n), now), day(n + 1), "on " + d.String()
			}
		}
	}
	return now, time.Time{}, ""
}

// later is the later of two times: a period that began earlier today starts now, so
// tonight's show is listed but this morning's is not.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// maxPriceDigits bounds the whole units of a price cap. Nine digits, under a billion, is
// beyond any ticket and keeps the cap in minor units far from overflowing int64; a longer
// amount caps nothing, so a question with one ("under 100000000000000000") asks for every
// price, and is answered as one without a cap rather than refused.
const maxPriceDigits = 9

// minorUnits reads "200", "49.90" or "49,90" as minor units, or reports false when the
// whole units have more than maxPriceDigits digits (leading zeros aside).
func minorUnits(s string) (int64, bool) {
	whole, frac, _ := strings.Cut(strings.ReplaceAll(s, ",", "."), ".")
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > maxPriceDigits {
		return 0, false
	}
	n, _ := strconv.ParseInt("0"+whole, 10, 64) // digits only, by the pattern
	cents, _ := strconv.ParseInt((frac + "00")[:2], 10, 64)
	return n*100 + cents, true
}

// fold lower-cases s and strips its accents, so "São" reads as "sao" and "Até" as "ate".
func fold(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	folded, _, err := transform.String(t, strings.ToLower(s))
	if err != nil {
		return strings.ToLower(s)
	}
	return folded
}

// contains reports whether the folded question holds any of the phrases as whole words.
func contains(q string, phrases ...string) bool {
	for _, p := range phrases {
		for i := strings.Index(q, p); i >= 0; {
			end := i + len(p)
			if !isWordByte(q, i-1) && !isWordByte(q, end) {
				return true
			}
			next := strings.Index(q[i+1:], p)
			if next < 0 {
				break
			}
			i += 1 + next
		}
	}
	return false
}

func isWordByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80
}

func location(name string, fallback *time.Location) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return fallback
	}
	return loc
}
