package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "search", HTTPAddr: ":8103", GRPCAddr: ":9103"}

// Config is search's own configuration, beside the platform's (config.Process).
type Config struct {
	CatalogAddr string // CATALOG_GRPC_ADDR: the catalog's gRPC host:port; default 127.0.0.1:9102
	Consumer    string // SEARCH_CONSUMER: this instance's durable consumer; default from host and port
}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, loadConfig, build)
}

func loadConfig(r *config.Reader) Config {
	return Config{
		CatalogAddr: r.Addr("CATALOG_GRPC_ADDR", "127.0.0.1:9102"),
		Consumer:    r.String("SEARCH_CONSUMER", ""),
	}
}

// build wires the service; the feeder runs as the process's worker.
func build(ctx context.Context, s *server.Server, cfg Config) (http.Handler, error) {
	conn, err := grpc.NewClient(cfg.CatalogAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), s.Telemetry.GRPCDialOption())
	if err != nil {
		return nil, fmt.Errorf("catalog client: %w", err)
	}
	s.OnClose(conn.Close)
	index := NewIndex()
	feeder := &Feeder{Index: index, Catalog: catalogv1.NewCatalogClient(conn), Log: s.Log}
	if s.NATS != nil {
		if feeder.JS, err = jetstream.New(s.NATS); err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
		feeder.Consumer = cfg.Consumer
		if feeder.Consumer == "" {
			host, _ := os.Hostname() // "" on failure still leaves the port to tell instances apart
			feeder.Consumer = ConsumerName(host, s.Config.HTTPAddr)
		}
	} else {
		s.Log.Warn("NATS_URL is not set: the index is built once and does not follow catalog changes")
	}
	s.Health.Add("index", func(context.Context) error {
		if !feeder.Ready() {
			return errors.New("not built yet")
		}
		return nil
	})
	searchv1.RegisterSearchServer(s.GRPC(), &grpcServer{index: index})
	s.Go("feeder", feeder.Run)
	return routes(s.Log, index).Mux(), nil
}
