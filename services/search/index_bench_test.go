package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// benchIndex holds events of random words: a vocabulary of about 30,000 terms, as a large
// catalog's descriptions would give. It also returns the words of one event's description.
func benchIndex(events int) (*Index, []string) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, 4+r.IntN(6))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	ix := NewIndex()
	var desc []string
	for i := range events {
		desc = desc[:0]
		for range 30 {
			desc = append(desc, word())
		}
		ix.Put(Doc{
			ID: fmt.Sprintf("evt-%d", i), Title: word() + " " + word(), Description: strings.Join(desc, " "),
			Performers: []string{word()}, City: "Lisboa", Tags: []string{"rock"}, StartsAt: time.Unix(int64(i), 0), Version: 1,
		})
	}
	return ix, desc[:16]
}

// BenchmarkSearch16Words runs a 16-word query on 1,000 events: one whose words all occur in
// one event, and one whose first word occurs nowhere.
func BenchmarkSearch16Words(b *testing.B) {
	ix, words := benchIndex(1000)
	for _, bb := range []struct {
		name  string
		words []string
	}{
		{"all match", words},
		{"first matches nothing", append([]string{"zzzzzzzzzz"}, words[:15]...)},
	} {
		q := Query{Text: strings.Join(bb.words, " ")}
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				if res, err := ix.Search(q); err != nil || res.Total > 1 {
					b.Fatalf("Search(%q) = %d hits, %v", q.Text, res.Total, err)
				}
			}
		})
	}
}

// BenchmarkPut replaces events of a 1,000-event index: each replacement changes the vocabulary.
func BenchmarkPut(b *testing.B) {
	ix, _ := benchIndex(1000)
	v := int64(1)
	for b.Loop() {
		v++
		ix.Put(Doc{ID: fmt.Sprintf("evt-%d", v%1000), Title: fmt.Sprintf("show %d", v), Description: fmt.Sprintf("night %d of many", v), Version: v})
	}
}
