package graphqlop

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"

	"boxoffice.dev/platform/problem"
)

// ErrNotPersisted answers a persisted query's hash that is not known: under Apollo's
// automatic persisted queries protocol the client then sends the query with its hash.
var ErrNotPersisted = errors.New("PersistedQueryNotFound")

// CodeNotPersisted is the extensions.code of ErrNotPersisted's GraphQL error.
const CodeNotPersisted = "PERSISTED_QUERY_NOT_FOUND"

// MaxPersisted is how many persisted queries the gateway keeps, as many as a BFF does.
const MaxPersisted = 1000

// MaxPersistedBytes is the longest query kept, as the BFFs keep (bffkit/graphqlserver):
// a longer one is sent whole every time.
const MaxPersistedBytes = 4 << 10

// Persisted is the gateway's cache of automatic persisted queries: hash → query, learnt from
// requests that carry both, so that a request carrying only the hash is weighed and checked
// against the policy like the query it stands for. A hash has one query (the hash is
// checked), so the gateway and a BFF that both know a hash run the same document. Least
// recently used entries go first. Safe for concurrent use.
type Persisted struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *entry, most recent first
	byKey map[string]*list.Element
}

type entry struct{ hash, query string }

// NewPersisted returns a cache of at most n queries (n below 1 is 1).
func NewPersisted(n int) *Persisted {
	return &Persisted{max: max(1, n), order: list.New(), byKey: map[string]*list.Element{}}
}

// Resolve fills r.Query from the cache when r carries only a hash (ErrNotPersisted when it
// is not known), and learns the query when r carries both (a 400 when they do not match).
// A request without a hash is left alone.
func (p *Persisted) Resolve(r *Request) error {
	switch {
	case r.Hash == "":
		return nil
	case r.Query != "":
		sum := sha256.Sum256([]byte(r.Query))
		if hex.EncodeToString(sum[:]) != r.Hash {
			return problem.InvalidField("extensions.persistedQuery.sha256Hash", "does not match the query's SHA-256")
		}
		if len(r.Query) <= MaxPersistedBytes {
			p.add(r.Hash, r.Query)
		}
		return nil
	}
	q, ok := p.get(r.Hash)
	if !ok {
		return ErrNotPersisted
	}
	r.Query = q
	return nil
}

func (p *Persisted) get(hash string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.byKey[hash]
	if !ok {
		return "", false
	}
	p.order.MoveToFront(e)
	return e.Value.(*entry).query, true
}

func (p *Persisted) add(hash, query string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.byKey[hash]; ok {
		p.order.MoveToFront(e)
		return
	}
	p.byKey[hash] = p.order.PushFront(&entry{hash, query})
	if p.order.Len() > p.max {
		last := p.order.Back()
		p.order.Remove(last)
		delete(p.byKey, last.Value.(*entry).hash)
	}
}
