package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
)

// NATS_STREAM_REPLICAS reaches the relay's stream, with natsconn's limits: unset or 1, one
// replica; 3 is refused by a NATS server outside a cluster, which fails the start where the
// mistake shows.
func TestRelayOutboxStreamReplicas(t *testing.T) {
	tests := []struct {
		name     string
		replicas string
		wantErr  string // "" means the stream is created with one replica
	}{
		{"unset", "", ""},
		{"1", "1", ""},
		{"3 on a single server", "3", "replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := testkit.StartNATS(t)
			env := map[string]string{"DATA_DIR": t.TempDir(), "NATS_URL": ns.ClientURL(), "NATS_STREAM_REPLICAS": tt.replicas}
			built := errors.New("built") // ends Main once the relay is set up
			var relayErr error
			err := server.Main(context.Background(), server.Spec{Name: "probe", HTTPAddr: "127.0.0.1:0"},
				func(k string) string { return env[k] }, tlog{t},
				func(ctx context.Context, s *server.Server) (http.Handler, error) {
					db, err := s.OpenDB(ctx, nil)
					if err != nil {
						return nil, err
					}
					if err := outbox.EnsureTable(ctx, db); err != nil {
						return nil, err
					}
					_, relayErr = s.RelayOutbox(ctx, db, "PROBE", "boxoffice.probe.>")
					return nil, built
				})
			if !errors.Is(err, built) {
				t.Fatalf("Main = %v, want the build to end it", err)
			}
			if tt.wantErr != "" {
				if relayErr == nil || !strings.Contains(relayErr.Error(), tt.wantErr) {
					t.Fatalf("RelayOutbox with NATS_STREAM_REPLICAS=%s = %v, want an error with %q", tt.replicas, relayErr, tt.wantErr)
				}
				return
			}
			if relayErr != nil {
				t.Fatalf("RelayOutbox with NATS_STREAM_REPLICAS=%q = %v", tt.replicas, relayErr)
			}
			stream, err := testkit.JetStream(t, ns.ClientURL()).Stream(t.Context(), "PROBE")
			if err != nil {
				t.Fatal(err)
			}
			cfg := stream.CachedInfo().Config
			if cfg.Replicas != 1 || cfg.MaxAge != natsconn.StreamMaxAge || cfg.MaxBytes != natsconn.StreamMaxBytes {
				t.Errorf("stream PROBE: Replicas %d, MaxAge %v, MaxBytes %d; want 1, %v, %d",
					cfg.Replicas, cfg.MaxAge, cfg.MaxBytes, natsconn.StreamMaxAge, natsconn.StreamMaxBytes)
			}
		})
	}
}
