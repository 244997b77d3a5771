package bffmobile

import (
	"context"
	"io"
	"net/http"
	"time"

	"boxoffice.dev/bff-mobile/graph"
	"boxoffice.dev/bffkit/graphqlserver"
	"boxoffice.dev/bffkit/loaders"
	"boxoffice.dev/bffkit/upstream"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// Spec names the process and its default listen address. bff-mobile serves no gRPC.
var Spec = server.Spec{Name: "bff-mobile", HTTPAddr: ":8111", GRPCAddr: ""}

// Config is bff-mobile's own configuration, beside the platform's. The defaults are the
// all-in-one mode's ports and limits sized for the app's own queries.
type Config struct {
	CatalogAddr   string        // CATALOG_GRPC_ADDR
	InventoryAddr string        // INVENTORY_GRPC_ADDR
	WaitroomAddr  string        // WAITROOM_GRPC_ADDR
	OrderAddr     string        // ORDER_GRPC_ADDR
	CallTimeout   time.Duration // BFF_CALL_TIMEOUT: each call that only reads
	WriteTimeout  time.Duration // BFF_WRITE_TIMEOUT: each call that changes something (upstream.Writes)
	MaxDepth      int           // GRAPHQL_MAX_DEPTH
	MaxComplexity int           // GRAPHQL_MAX_COMPLEXITY
	GraphiQL      bool          // GRAPHIQL: the GraphiQL page and introspection (all-in-one mode)
}

// LoadConfig reads bff-mobile's variables. Reads get a short timeout: a phone user waits for
// the whole answer, so a slow availability is better dropped (its field null, with an error)
// than waited for; writes a long one (upstream.Deadlines). The depth limit fits the app's
// deepest query (a hold's fields, 4 levels) with room; the complexity limit one full feed
// page of 50 cards, not two.
func LoadConfig(r *config.Reader) Config {
	return Config{
		CatalogAddr:   r.Addr("CATALOG_GRPC_ADDR", "127.0.0.1:9102"),
		InventoryAddr: r.Addr("INVENTORY_GRPC_ADDR", "127.0.0.1:9104"),
		WaitroomAddr:  r.Addr("WAITROOM_GRPC_ADDR", "127.0.0.1:9105"),
		OrderAddr:     r.Addr("ORDER_GRPC_ADDR", "127.0.0.1:9106"),
		CallTimeout:   r.Duration("BFF_CALL_TIMEOUT", 800*time.Millisecond),
		WriteTimeout:  r.Duration("BFF_WRITE_TIMEOUT", upstream.DefaultWriteTimeout),
		MaxDepth:      r.Int("GRAPHQL_MAX_DEPTH", 6, 1, 50),
		MaxComplexity: r.Int("GRAPHQL_MAX_COMPLEXITY", 1000, 1, 1_000_000),
		GraphiQL:      r.Bool("GRAPHIQL", false),
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
// check: without it no screen renders, while the others fail their own fields alone.
func build(_ context.Context, s *server.Server, cfg Config) (http.Handler, error) {
	conns, err := upstream.Connect(s, cfg.Deadlines(), map[string]string{
		"catalog": cfg.CatalogAddr, "inventory": cfg.InventoryAddr, "waitroom": cfg.WaitroomAddr, "order": cfg.OrderAddr,
	}, "catalog")
	if err != nil {
		return nil, err
	}

	res := &graph.Resolver{
		Catalog:   catalogv1.NewCatalogClient(conns["catalog"]),
		Inventory: inventoryv1.NewInventoryClient(conns["inventory"]),
		Waitroom:  waitroomv1.NewWaitroomClient(conns["waitroom"]),
		Orders:    orderv1.NewOrderClient(conns["order"]),
	}
	gql := Handler(res, graphqlserver.Options{
		MaxDepth: cfg.MaxDepth, MaxComplexity: cfg.MaxComplexity, GraphiQL: cfg.GraphiQL, GraphiQLPath: GraphiQLPath, Log: s.Log,
	}, loaders.Options{TracerProvider: s.Telemetry.TracerProvider})
	mux := http.NewServeMux()
	mux.Handle("POST "+Path, gql)
	mux.Handle("GET "+Path, gql) // persisted queries by hash; a browser is sent to GraphiQL when enabled
	if cfg.GraphiQL {
		graphqlserver.GraphiQL{Title: "BoxOffice mobile", Path: GraphiQLPath, Endpoint: Path}.Register(mux)
	}
	return mux, nil
}
