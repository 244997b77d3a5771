package graphqlserver

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
)

// The caches below hold at most entries queries of at most maxCachedQuery bytes each: an LRU
// bounded by its count alone keeps whatever size it is sent, and a thousand large queries
// (or their parsed documents, several times larger) are more memory than a BFF has. The
// clients' queries are all far below maxCachedQuery; a bigger one still works, parsed or
// sent again each time.
const maxCachedQuery = 4 << 10

// queryCache keeps parsed documents by their query text.
func queryCache(entries int) graphql.Cache[*ast.QueryDocument] {
	return smallOnly[*ast.QueryDocument]{lru.New[*ast.QueryDocument](entries), func(query string, _ *ast.QueryDocument) int { return len(query) }}
}

// persistedQueries keeps the automatic persisted queries' texts by their hash.
func persistedQueries(entries int) graphql.Cache[string] {
	return smallOnly[string]{lru.New[string](entries), func(_ string, query string) int { return len(query) }}
}

// smallOnly is a cache that does not keep an entry whose query is over maxCachedQuery bytes,
// as size measures it. It is safe for concurrent use if its cache is.
type smallOnly[T any] struct {
	graphql.Cache[T]
	size func(key string, value T) int
}

var _ graphql.Cache[string] = smallOnly[string]{}

// Add keeps value under key unless its query is too big to.
func (c smallOnly[T]) Add(ctx context.Context, key string, value T) {
	if c.size(key, value) <= maxCachedQuery {
		c.Cache.Add(ctx, key, value)
	}
}
