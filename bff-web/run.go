package bffweb

import (
	"context"
	"io"
	"net/http"
	"time"

	"boxoffice.dev/bff-web/graph"
	"boxoffice.dev/bffkit/graphqlserver"
	"boxoffice.dev/bffkit/loaders"
	"boxoffice.dev/bffkit/upstream"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// Spec names the process and its default listen address. bff-web serves no gRPC.
var Spec = server.Spec{Name: "bff-web", HTTPAddr: ":8112", GRPCAddr: ""}

// Config is bff-web's own configuration, beside the platform's. The defaults are the
// all-in-one mode's ports and limits sized for the web app's own queries.
type Config struct {
	CatalogAddr      string        // CATALOG_GRPC_ADDR
	InventoryAddr    string        // INVENTORY_GRPC_ADDR
	OrderAddr        string        // ORDER_GRPC_ADDR
	SearchAddr       string        // SEARCH_GRPC_ADDR
	NotificationAddr string        // NOTIFICATION_GRPC_ADDR
	AssistantAddr    string        // ASSISTANT_GRPC_ADDR
	CallTimeout      time.Duration // BFF_CALL_TIMEOUT: each call that only reads
	WriteTimeout     time.Duration // BFF_WRITE_TIMEOUT: each call that changes something (upstream.Writes)
	MaxDepth         int           // GRAPHQL_MAX_DEPTH
	MaxComplexity    int           // GRAPHQL_MAX_COMPLEXITY
	GraphiQL         bool          // GRAPHIQL: the GraphiQL page and introspection (all-in-one mode)
}

// LoadConfig reads bff-web's variables. Reads get BFF_CALL_TIMEOUT, writes the longer
// BFF_WRITE_TIMEOUT (upstream.Deadlines). The depth limit leaves room for the web app's
// deepest query (an order's event's seat map, seats included: 9 levels is over it); the
// complexity limit admits a search page of 100 hits as a results list shows them (1410), not
// 100 hits with every field and each venue's sections (2910).
func LoadConfig(r *config.Reader) Config {
	return Config{
		CatalogAddr:      r.Addr("CATALOG_GRPC_ADDR", "127.0.0.1:9102"),
		InventoryAddr:    r.Addr("INVENTORY_GRPC_ADDR", "127.0.0.1:9104"),
		OrderAddr:        r.Addr("ORDER_GRPC_ADDR", "127.0.0.1:9106"),
		SearchAddr:       r.Addr("SEARCH_GRPC_ADDR", "127.0.0.1:9103"),
		NotificationAddr: r.Addr("NOTIFICATION_GRPC_ADDR", "127.0.0.1:9108"),
		AssistantAddr:    r.Addr("ASSISTANT_GRPC_ADDR", "127.0.0.1:9109"),
		CallTimeout:      r.Duration("BFF_CALL_TIMEOUT", 2*time.Second),
		WriteTimeout:     r.Duration("BFF_WRITE_TIMEOUT", upstream.DefaultWriteTimeout),
		MaxDepth:         r.Int("GRAPHQL_MAX_DEPTH", 8, 1, 50),
		MaxComplexity:    r.Int("GRAPHQL_MAX_COMPLEXITY", 2500, 1, 1_000_000),
		GraphiQL:         r.Bool("GRAPHIQL", false),
	}
}

// Deadlines is the deadline of each call to a service: reads CallTimeout, writes WriteTimeout.
func (c Config) Deadlines() upstream.Deadlines {
	return upstream.Deadlines{Read: c.CallTimeout, Write: c.WriteTimeout}
}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, LoadConfig, build)
}

// build dials the services and mounts the GraphQL endpoint. Only the catalog is a readiness
// check: without it no page renders, while the others fail their own fields alone.
func build(_ context.Context, s *server.Server, cfg Config) (http.Handler, error) {
	conns, err := upstream.Connect(s, cfg.Deadlines(), map[string]string{
		"catalog": cfg.CatalogAddr, "inventory": cfg.InventoryAddr, "order": cfg.OrderAddr,
		"search": cfg.SearchAddr, "notification": cfg.NotificationAddr, "assistant": cfg.AssistantAddr,
	}, "catalog")
	if err != nil {
		return nil, err
	}

	res := &graph.Resolver{
		Catalog:       catalogv1.NewCatalogClient(conns["catalog"]),
		Inventory:     inventoryv1.NewInventoryClient(conns["inventory"]),
		Orders:        orderv1.NewOrderClient(conns["order"]),
		Search:        searchv1.NewSearchClient(conns["search"]),
		Notifications: notificationv1.NewNotificationClient(conns["notification"]),
		Assistant:     assistantv1.NewAssistantClient(conns["assistant"]),
	}
	gql := Handler(res, graphqlserver.Options{
		MaxDepth: cfg.MaxDepth, MaxComplexity: cfg.MaxComplexity, GraphiQL: cfg.GraphiQL, GraphiQLPath: GraphiQLPath, Log: s.Log,
	}, loaders.Options{TracerProvider: s.Telemetry.TracerProvider})
	mux := http.NewServeMux()
	mux.Handle("POST "+Path, gql)
	mux.Handle("GET "+Path, gql) // persisted queries by hash; a browser is sent to GraphiQL when enabled
	if cfg.GraphiQL {
		graphqlserver.GraphiQL{Title: "BoxOffice web", Path: GraphiQLPath, Endpoint: Path}.Register(mux)
	}
	return mux, nil
}
