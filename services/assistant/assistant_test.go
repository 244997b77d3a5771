package assistant

import (
	"slices"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/money"
)

func TestParse(t *testing.T) {
	wed := time.Date(2030, 6, 12, 15, 0, 0, 0, time.UTC) // a Wednesday
	sun := time.Date(2030, 6, 16, 10, 0, 0, 0, time.UTC)
	sp, _ := time.LoadLocation("America/Sao_Paulo")
	lis, _ := time.LoadLocation("Europe/Lisbon")
	ber, _ := time.LoadLocation("Europe/Berlin")
	at := func(loc *time.Location, y int, m time.Month, d int) time.Time {
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	tests := []struct {
		name     string
		question string
		now      time.Time
		want     Intent
	}{
		{"the example", "What's on in São Paulo this weekend under 200?", wed,
			Intent{City: "São Paulo", From: at(sp, 2030, 6, 15), To: at(sp, 2030, 6, 17), Period: "this weekend", MaxPrice: 20000}},
		{"no accents, tomorrow in the city's zone", "concerts in SAO PAULO tomorrow", wed,
			Intent{City: "São Paulo", From: at(sp, 2030, 6, 13), To: at(sp, 2030, 6, 14), Period: "tomorrow"}},
		{"genre, English city name, next week", "any jazz in Lisbon next week?", wed,
			Intent{City: "Lisboa", From: at(lis, 2030, 6, 17), To: at(lis, 2030, 6, 24), Period: "next week", Tags: []string{"jazz"}}},
		{"tonight starts now", "comedy tonight in Berlin", wed,
			Intent{City: "Berlin", From: wed, To: at(ber, 2030, 6, 13), Period: "today", Tags: []string{"comedy"}}},
		{"a coming month", "anything in December?", wed,
			Intent{From: at(time.UTC, 2030, 12, 1), To: at(time.UTC, 2031, 1, 1), Period: "in December"}},
		{"a past month means next year's", "shows in march", wed,
			Intent{From: at(time.UTC, 2031, 3, 1), To: at(time.UTC, 2031, 4, 1), Period: "in March"}},
		{"this month starts now", "what's on in june", wed,
			Intent{From: wed, To: at(time.UTC, 2030, 7, 1), Period: "in June"}},
		{"a weekday", "something on Friday", wed,
			Intent{From: at(time.UTC, 2030, 6, 14), To: at(time.UTC, 2030, 6, 15), Period: "on Friday"}},
		{"'may' without a preposition is a verb", "may I see some rock?", wed,
			Intent{From: wed, Tags: []string{"rock"}}},
		{"portuguese price and city", "fado até 30 euros em Lisboa", wed,
			Intent{City: "Lisboa", From: wed, MaxPrice: 3000, Tags: []string{"fado"}}},
		{"price with cents", "techno under €49,90", wed,
			Intent{From: wed, MaxPrice: 4990, Tags: []string{"electronic"}}},
		{"price at the digits bound", "anything under 999999999,99", wed,
			Intent{From: wed, MaxPrice: 99999999999}},
		{"price with leading zeros", "anything under 00000000000050", wed,
			Intent{From: wed, MaxPrice: 5000}},
		{"price over the digits bound is no cap", "anything under 1000000000", wed,
			Intent{From: wed}},
		{"price overflowing minor units is no cap", "jazz in Lisboa under 100000000000000000", wed,
			Intent{City: "Lisboa", From: wed, Tags: []string{"jazz"}}},
		{"price overflowing int64 is no cap", "jazz under 123456789012345678901234", wed,
			Intent{From: wed, Tags: []string{"jazz"}}},
		{"one tag per genre", "electronic or techno, a dj set", wed,
			Intent{From: wed, Tags: []string{"electronic"}}},
		{"two genres", "jazz or classical in berlin", wed,
			Intent{City: "Berlin", From: wed, Tags: []string{"jazz", "classical"}}},
		{"next weekend", "next weekend in Rio", wed,
			Intent{City: "Rio de Janeiro", From: at(sp, 2030, 6, 22), To: at(sp, 2030, 6, 24), Period: "next weekend"}},
		{"this weekend asked on Sunday", "this weekend", sun,
			Intent{From: sun, To: at(time.UTC, 2030, 6, 17), Period: "this weekend"}},
		{"words inside words do not count", "rockabilly in portobello", wed,
			Intent{From: wed}},
		{"nothing understood", "hello there", wed, Intent{From: wed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.question, tt.now)
			if got.City != tt.want.City || !got.From.Equal(tt.want.From) || !got.To.Equal(tt.want.To) ||
				got.Period != tt.want.Period || got.MaxPrice != tt.want.MaxPrice || !slices.Equal(got.Tags, tt.want.Tags) {
				t.Errorf("Parse(%q) =\n %+v, want\n %+v", tt.question, got, tt.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		question, answer string
		want             int
	}{
		{"", "", BaseTokens},
		{"a b c", "d e", BaseTokens + 7}, // 5 words × 1.3 = 6.5, rounded away from zero
		{"what's on", strings.Repeat("word ", 100), BaseTokens + 133},
	}
	for _, tt := range tests {
		if got := Tokens(tt.question, tt.answer); got != tt.want {
			t.Errorf("Tokens(%q, %d words) = %d, want %d", tt.question, len(strings.Fields(tt.answer)), got, tt.want)
		}
	}
}

func TestCompose(t *testing.T) {
	in := Intent{City: "São Paulo", Period: "this weekend", MaxPrice: 20000, Tags: []string{"jazz"}}
	bossa := Match{Title: "Noite de Bossa Nova", StartsAt: time.Date(2030, 6, 15, 23, 0, 0, 0, time.UTC),
		VenueName: "Teatro da Consolação", City: "São Paulo", Country: "BR", MinPrice: money.Money{Currency: "BRL", Minor: 12000}}
	tests := []struct {
		name    string
		matches []Match
		more    int
		want    string
	}{
		{"none", nil, 0, "I found no events of jazz in São Paulo this weekend under 200. Try other dates, another city or a higher price."},
		{"one, in local time", []Match{bossa}, 0,
			"I found 1 event of jazz in São Paulo this weekend under 200:\n- Noite de Bossa Nova, Sat 15 Jun 20:00 at Teatro da Consolação, São Paulo, from BRL 120.00"},
		{"more than listed", []Match{bossa}, 3,
			"I found 4 events of jazz in São Paulo this weekend under 200:\n- Noite de Bossa Nova, Sat 15 Jun 20:00 at Teatro da Consolação, São Paulo, from BRL 120.00\n…and 3 more. Add a date, a price or a genre to narrow it down."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compose(in, tt.matches, tt.more); got != tt.want {
				t.Errorf("Compose() =\n%q, want\n%q", got, tt.want)
			}
		})
	}
}
