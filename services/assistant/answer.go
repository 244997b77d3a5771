package assistant

import (
	"fmt"
	"math"
	"strings"
	"time"

	"boxoffice.dev/platform/money"
)

// Match is an event an answer lists.
type Match struct {
	ID        string      `json:"id"`
	Title     string      `json:"title"`
	StartsAt  time.Time   `json:"starts_at"`
	VenueID   string      `json:"venue_id"`
	VenueName string      `json:"venue_name"`
	City      string      `json:"city"`
	Country   string      `json:"country"`
	MinPrice  money.Money `json:"min_price"`
}

// MaxListed is how many events an answer lists; the rest are counted.
const MaxListed = 5

// Compose writes the answer to in from matches (soonest first, at most MaxListed) and how
// many more there are. Times are shown in the venue's local time where the country's zone
// is known.
func Compose(in Intent, matches []Match, more int) string {
	what := describe(in)
	if len(matches) == 0 {
		return fmt.Sprintf("I found no events%s. Try other dates, another city or a higher price.", what)
	}
	var b strings.Builder
	noun := "events"
	if len(matches)+more == 1 {
		noun = "event"
	}
	fmt.Fprintf(&b, "I found %d %s%s:", len(matches)+more, noun, what)
	for _, m := range matches {
		fmt.Fprintf(&b, "\n- %s, %s at %s, %s, from %s",
			m.Title, m.StartsAt.In(zoneOf(m.Country)).Format("Mon 2 Jan 15:04"), m.VenueName, m.City, m.MinPrice)
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n…and %d more. Add a date, a price or a genre to narrow it down.", more)
	}
	return b.String()
}

// describe renders the intent as the tail of a sentence: " of jazz in Lisboa this weekend
// under 200".
func describe(in Intent) string {
	var b strings.Builder
	if len(in.Tags) > 0 {
		b.WriteString(" of " + strings.Join(in.Tags, " or "))
	}
	if in.City != "" {
		b.WriteString(" in " + in.City)
	}
	if in.Period != "" {
		b.WriteString(" " + in.Period)
	}
	if in.MaxPrice > 0 {
		b.WriteString(" under " + strings.TrimSuffix(fmt.Sprintf("%d.%02d", in.MaxPrice/100, in.MaxPrice%100), ".00"))
	}
	return b.String()
}

// zones are the local times of the countries the catalog sells in; elsewhere times are UTC.
var zones = map[string]string{"BR": "America/Sao_Paulo", "PT": "Europe/Lisbon", "DE": "Europe/Berlin"}

func zoneOf(country string) *time.Location {
	if name, ok := zones[country]; ok {
		return location(name, time.UTC)
	}
	return time.UTC
}

// Token pricing: a fixed cost per answer for the retrieval, plus 1.3 tokens per word of
// question and answer, the usual ratio of tokens to English words.
const (
	BaseTokens     = 20
	TokensPerWord  = 1.3
	maxQuestionLen = 500
)

// Tokens is what an answer costs: BaseTokens + round(TokensPerWord × words), where words
// counts the whitespace-separated words of question and answer. It is deterministic, so the
// same question over the same catalog always costs the same; longer answers cost more.
func Tokens(question, answer string) int {
	words := len(strings.Fields(question)) + len(strings.Fields(answer))
	return BaseTokens + int(math.Round(TokensPerWord*float64(words)))
}
