// Package graphqlserver is the GraphQL endpoint every BoxOffice BFF serves, built once around
// a gqlgen executable schema so both BFFs answer alike:
//
//   - POST (and GET, for persisted queries a CDN can cache) on one path, no websockets: the
//     BFFs have no subscriptions, and a transport not offered is one not to secure;
//   - automatic persisted queries (Apollo's APQ) over an in-memory LRU;
//   - a small body and a bounded number of tokens per query, so parsing and validation
//     (quadratic at worst) stay cheap; a body that is no GraphQL request is refused as
//     application/problem+json, saying what is wrong without repeating it;
//   - depth, field and complexity limits and one write per operation, before any resolver;
//   - the caller the gateway verified, from its headers into the context and onto every
//     outgoing gRPC call; the query cost the gateway weighed, as extensions.cost;
//   - errors as GraphQL errors with a problem code in extensions; internal ones are logged
//     and shown as "internal error" with a trace id;
//   - GraphiQL (embedded, not from a CDN) and introspection only when asked: in production
//     the schema is the clients' contract, not a public map, so validation errors suggest no
//     field names either.
//
// Why each exists: docs/lessons/bff.md.
package graphqlserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/platform/httpserver"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/problem"
)

// Options configures New. The zero value serves with the defaults below, without GraphiQL.
type Options struct {
	// MaxDepth is how deeply selections may nest (fields, not fragments); 0 or less = 10.
	MaxDepth int
	// MaxComplexity bounds gqlgen's complexity of an operation: one per field unless the
	// schema's complexity functions weigh lists by their size; 0 or less = 1000. It bounds
	// the operation's fields with its fragments expanded too (FieldLimit).
	MaxComplexity int
	// MaxTokens bounds how many tokens (names, punctuation, values) of a query the parser
	// reads before refusing it; 0 or less = 1000. Parsing and validating cost grows with the
	// tokens, quadratically for repeated fields, and runs before any other limit: 8000
	// repeated fields take seconds of a core. The clients' largest query (the web's event
	// page) is about 100 tokens, GraphiQL's introspection about 200.
	MaxTokens int
	// MaxBodyBytes bounds a request's body, the query and its variables; 0 or less = 16 KiB,
	// ten times the clients' largest request and far below the platform's 1 MiB for JSON
	// APIs. A bigger body is refused with 413 before it is read.
	MaxBodyBytes int64
	// WriteQueries names the root Query fields that act (bff-web's ask spends assistant
	// tokens). Beside every Mutation field, they are the writes an operation may carry one
	// of (OneWrite); nil = only the mutations.
	WriteQueries []string
	// PersistedQueries is how many persisted queries the APQ cache keeps; 0 or less = 1000.
	// Neither it nor the parsed-query cache keeps a query over 4 KiB.
	PersistedQueries int
	// GraphiQL allows introspection, which the GraphiQL page (see GraphiQL) needs, and sends
	// a browser's GET (Accept: text/html) to GraphiQLPath.
	GraphiQL bool
	// GraphiQLPath is where the BFF serves its GraphiQL page; "" = a browser's GET is
	// answered like any other, even with GraphiQL.
	GraphiQLPath string
	// Log receives internal errors and recovered panics; nil = discard.
	Log *slog.Logger
}

// Error codes in extensions.code for the limits, beside the problem codes.
const (
	CodeDepthLimit      = "DEPTH_LIMIT_EXCEEDED"
	CodeComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED" // gqlgen's own, and FieldLimit's
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
	if o.MaxTokens <= 0 {
		o.MaxTokens = 1000
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 16 << 10
	}
	if o.PersistedQueries <= 0 {
		o.PersistedQueries = 1000
	}
	if o.Log == nil {
		o.Log = logging.Discard()
	}
	srv := handler.New(es)
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetParserTokenLimit(o.MaxTokens)
	srv.SetQueryCache(queryCache(1000))
	srv.Use(extension.AutomaticPersistedQuery{Cache: persistedQueries(o.PersistedQueries)})
	if o.GraphiQL {
		srv.Use(extension.Introspection{})
	} else {
		srv.Use(NoIntrospection{})
		srv.SetDisableSuggestion(true) // "Did you mean …" would map the schema field by field
	}
	srv.Use(DepthLimit{Max: o.MaxDepth})
	srv.Use(FieldLimit{Max: o.MaxComplexity}) // before the complexity limit's own walk
	srv.Use(extension.FixedComplexityLimit(o.MaxComplexity))
	srv.Use(OneWrite{Queries: o.WriteQueries})
	srv.AroundResponses(withCost)
	srv.SetErrorPresenter(presentError(o.Log))
	srv.SetRecoverFunc(recoverPanic(o.Log))

	var h http.Handler = srv
	if o.GraphiQL && o.GraphiQLPath != "" {
		h = withGraphiQL(h, o.GraphiQLPath)
	}
	return httpserver.LimitBody(o.MaxBodyBytes)(checkBody(withCaller(h)))
}

// A refusal before execution (OneWrite's problem code, the depth and complexity limits) is
// the request's fault, and answers 422 as gqlgen's own validation failures do, not 200.
func init() {
	for _, code := range []string{string(problem.Invalid), CodeDepthLimit, CodeComplexityLimit} {
		errcode.RegisterErrorType(code, errcode.KindProtocol)
	}
}

// withGraphiQL sends a browser's GET (Accept: text/html) of the endpoint to the GraphiQL
// page at page, which posts its queries back here.
func withGraphiQL(next http.Handler, page string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, page, http.StatusFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type callerKey struct{}

type costKey struct{}

// withCost adds to a response what the gateway weighed its operation at, and the caller's
// budget in points after it, as extensions.cost: the gateway decides, the BFF only reports.
func withCost(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if c, ok := ctx.Value(costKey{}).(json.RawMessage); ok && resp != nil {
		if resp.Extensions == nil {
			resp.Extensions = map[string]any{}
		}
		resp.Extensions["cost"] = c
	}
	return resp
}

// withCaller puts the identity the gateway verified into the request's context, and into its
// outgoing gRPC metadata: every service call a resolver or a dataloader makes from it acts
// for the same caller, with nothing to remember per call.
func withCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := identity.FromRequest(r)
		ctx := context.WithValue(r.Context(), callerKey{}, id)
		if c := r.Header.Get(identity.HeaderQueryCost); c != "" && json.Valid([]byte(c)) && c[0] == '{' {
			ctx = context.WithValue(ctx, costKey{}, json.RawMessage(c))
		}
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
// as they are, and those it raised on a path while reading the request (an argument it could
// not coerce) say invalid; anything else is internal, logged with its cause and shown
// without it.
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
		if field, ok := argumentAt(ctx, gqlErr.Path); ok {
			gqlErr.Extensions = map[string]any{"code": string(problem.Invalid), "field": field}
			return gqlErr
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

// argumentAt reports whether path leads from the field of ctx into one of its arguments, and
// names it there ("input.quantity"). That is where gqlgen puts an error reading an argument
// it could not coerce (a custom scalar's parse, a value validation let through): the
// request is at fault, not the server. A resolver's own error has the field's path.
func argumentAt(ctx context.Context, path ast.Path) (string, bool) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil || fc.Field.Definition == nil {
		return "", false
	}
	own := fc.Path()
	if len(path) <= len(own) || !slices.Equal(path[:len(own)], own) {
		return "", false
	}
	name, ok := path[len(own)].(ast.PathName)
	if !ok || fc.Field.Definition.Arguments.ForName(string(name)) == nil {
		return "", false
	}
	return path[len(own):].String(), true
}

// recoverPanic keeps a bug in one resolver from taking the process down: the field fails as
// an internal error and the log has the stack.
func recoverPanic(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, v any) error {
		log.ErrorContext(ctx, "graphql resolver panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		return fmt.Errorf("panic: %v", v)
	}
}
