// Package graphqlserver is the GraphQL endpoint every BoxOffice BFF serves, built once around
// a gqlgen executable schema so both BFFs answer alike:
//
//   - POST (and GET, for persisted queries a CDN can cache) on one path, no websockets: the
//     BFFs have no subscriptions, and a transport not offered is one not to secure;
//   - automatic persisted queries (Apollo's APQ protocol) over an in-memory LRU: a client
//     sends a query's SHA-256 and the query itself only the first time the server does not
//     know it, which is what makes a mobile request small;
//   - a depth limit and a complexity limit, both checked after validation and before any
//     resolver runs, so an expensive query costs one parse and no service call;
//   - the caller the gateway verified, taken from its headers (never from the query) into the
//     context, and onto every outgoing gRPC call as identity metadata;
//   - errors as GraphQL errors with a problem code in extensions ("not_found",
//     "unavailable"); internal ones are logged and shown as "internal error" with a trace id;
//   - GraphiQL and introspection only when asked (the all-in-one mode): in production the
//     schema is the clients' contract, not a public map of the API.
package graphqlserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/problem"
)

// Options configures New. The zero value serves with the defaults below, without GraphiQL.
type Options struct {
	// MaxDepth is how deeply selections may nest (fields, not fragments); 0 or less = 10.
	MaxDepth int
	// MaxComplexity bounds gqlgen's complexity of an operation: one per field unless the
	// schema's complexity functions weigh lists by their size; 0 or less = 1000.
	MaxComplexity int
	// PersistedQueries is how many persisted queries the APQ cache keeps; 0 or less = 1000.
	PersistedQueries int
	// GraphiQL serves the GraphiQL page to a browser's GET and allows introspection.
	GraphiQL bool
	// Title names the GraphiQL page; "" = "GraphQL".
	Title string
	// Log receives internal errors and recovered panics; nil = discard.
	Log *slog.Logger
}

// Error codes in extensions.code for the limits, beside the problem codes.
const (
	CodeDepthLimit = "DEPTH_LIMIT_EXCEEDED"
)

// New returns the handler serving es. Mount it at the BFF's path; it serves whatever path it
// is mounted at. The handler is safe for concurrent use.
func New(es graphql.ExecutableSchema, o Options) http.Handler {
	if o.MaxDepth <= 0 {
		o.MaxDepth = 10
	}
	if o.MaxComplexity <= 0 {
		o.MaxComplexity = 1000
	}
	if o.PersistedQueries <= 0 {
		o.PersistedQueries = 1000
	}
	if o.Title == "" {
		o.Title = "GraphQL"
	}
	if o.Log == nil {
		o.Log = logging.Discard()
	}
	srv := handler.New(es)
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](o.PersistedQueries)})
	if o.GraphiQL {
		srv.Use(extension.Introspection{})
	}
	srv.Use(DepthLimit{Max: o.MaxDepth})
	srv.Use(extension.FixedComplexityLimit(o.MaxComplexity))
	srv.SetErrorPresenter(presentError(o.Log))
	srv.SetRecoverFunc(recoverPanic(o.Log))

	var h http.Handler = srv
	if o.GraphiQL {
		h = withGraphiQL(h, o.Title)
	}
	return withCaller(h)
}

// withGraphiQL answers a browser's GET (Accept: text/html) with the GraphiQL page, which
// posts its queries to the same path.
func withGraphiQL(next http.Handler, title string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			playground.Handler(title, r.URL.Path).ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type callerKey struct{}

// withCaller puts the identity the gateway verified into the request's context, and into its
// outgoing gRPC metadata: every service call a resolver or a dataloader makes from it acts
// for the same caller, with nothing to remember per call.
func withCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := identity.FromRequest(r)
		ctx := context.WithValue(r.Context(), callerKey{}, id)
		next.ServeHTTP(w, r.WithContext(identity.OutgoingContext(ctx, id)))
	})
}

// Caller is the identity the gateway verified for this request; the zero Identity when
// there is none (or ctx did not come through New's handler).
func Caller(ctx context.Context) identity.Identity {
	id, _ := ctx.Value(callerKey{}).(identity.Identity)
	return id
}

// User is the signed-in account of this request, or an Unauthorized problem when the
// gateway verified none: for the fields and mutations that act for a fan.
func User(ctx context.Context) (string, error) {
	if u := Caller(ctx).User; u != "" {
		return u, nil
	}
	return "", problem.New(problem.Unauthorized, "sign in first")
}

// presentError turns a resolver's error into a GraphQL error a client can act on: a problem
// keeps its message and gives its code; gqlgen's own errors (syntax, validation, limits) stay
// as they are; anything else is internal, logged with its cause and shown without it.
func presentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gqlErr := graphql.DefaultErrorPresenter(ctx, err)
		if p, ok := errors.AsType[*problem.Error](err); ok && p.Code != problem.Internal {
			gqlErr.Message = p.Message
			gqlErr.Extensions = map[string]any{"code": string(p.Code)}
			if p.Field != "" {
				gqlErr.Extensions["field"] = p.Field
			}
			return gqlErr
		}
		if own, ok := errors.AsType[*gqlerror.Error](err); ok && own.Err == nil {
			return own
		}
		log.ErrorContext(ctx, "graphql field failed", "path", gqlErr.Path.String(), "error", err)
		gqlErr.Message = "internal error"
		gqlErr.Extensions = map[string]any{"code": string(problem.Internal)}
		if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
			gqlErr.Extensions["traceId"] = sc.TraceID().String()
		}
		return gqlErr
	}
}

// recoverPanic keeps a bug in one resolver from taking the process down: the field fails as
// an internal error and the log has the stack.
func recoverPanic(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, v any) error {
		log.ErrorContext(ctx, "graphql resolver panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		return fmt.Errorf("panic: %v", v)
	}
}
