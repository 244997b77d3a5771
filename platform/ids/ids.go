// Package ids makes the ids BoxOffice gives what it creates: a prefix naming the kind of
// thing ("ord_", "hold-") and 128 random bits, so an id in a URL grants nothing by being
// known and two instances never make the same one without asking each other.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
)

// New returns prefix followed by 32 lowercase hex digits: 128 bits from crypto/rand.
func New(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: it crashes the program rather than return an error
	return prefix + hex.EncodeToString(b[:])
}

// Func makes an id with a prefix; a store holds one as a field so a test can make its ids
// predictable (Sequence). The nil Func is New.
type Func func(prefix string) string

// New returns f(prefix), or New(prefix) when f is nil.
func (f Func) New(prefix string) string {
	if f == nil {
		return New(prefix)
	}
	return f(prefix)
}

// Sequence returns a Func that numbers its ids in the order it makes them: prefix + "000001",
// then prefix + "000002", ... across all prefixes. It is safe for concurrent use. For tests:
// its ids are guessable.
func Sequence() Func {
	var n atomic.Int64
	return func(prefix string) string { return fmt.Sprintf("%s%06d", prefix, n.Add(1)) }
}
