package waitroom

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	"boxoffice.dev/services/waitroom/pass"
)

// TestFlashSalesCatchUpFromTheCatalog: a flash sale the stream no longer holds (older than
// its retention: the stream is there, its change is not) or never carried to the waitroom
// (NATS_URL unset) still opens its queue, read back from the catalog when the waitroom
// starts; an event that is not a flash sale opens none.
func TestFlashSalesCatchUpFromTheCatalog(t *testing.T) {
	starts := time.Now().Add(24 * time.Hour)
	tests := []struct {
		name string
		nats bool // the waitroom follows the stream
	}{
		{"the stream lost the change", true},
		{"no NATS: once at start", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rds := testkit.StartRedis(t)
			catalogAddr := serveCatalog(t,
				&catalogv1.Event{Id: "evt-old-flash", Version: 3, FlashSale: true, StartsAt: timestamppb.New(starts)},
				&catalogv1.Event{Id: "evt-old-plain", Version: 1, StartsAt: timestamppb.New(starts)},
			)
			env := map[string]string{
				"REDIS_URL": rds.URL(), "CATALOG_GRPC_ADDR": catalogAddr, "DRAIN_DELAY": "0s",
				"WAITROOM_SIGNING_KEY": pass.EncodePrivateKey(testKey),
			}
			if tt.nats {
				natsURL := testkit.StartNATSServer(t, nil).ClientURL()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := natsconn.EnsureStream(ctx, testkit.JetStream(t, natsURL), CatalogStream, []string{catalogv1.StreamSubjects}); err != nil {
					t.Fatal(err)
				}
				env["NATS_URL"] = natsURL
			}
			wr := testkit.RunProcess(t, Run, env)
			sale := rds.Client()
			testkit.Eventually(t, 10*time.Second, "evt-old-flash's sale open", func() bool {
				return sale.Exists(context.Background(), keysFor("evt-old-flash").sale).Val() == 1
			})
			if code := call(t, http.MethodPost, wr.HTTPURL+"/v1/events/evt-old-flash/queue", "acc-a", nil, nil); code != http.StatusOK {
				t.Errorf("join evt-old-flash = %d, want 200", code)
			}
			want := `boxoffice_waitroom_catalog_catchups_total{outcome="complete"} 1`
			testkit.Eventually(t, 5*time.Second, want+" on /metrics", func() bool {
				res, err := http.Get(wr.HTTPURL + "/metrics")
				if err != nil {
					return false
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return strings.Contains(string(b), want)
			})
			// The pass is over: what it did not open, nothing will.
			if code := call(t, http.MethodPost, wr.HTTPURL+"/v1/events/evt-old-plain/queue", "acc-a", nil, nil); code != http.StatusNotFound {
				t.Errorf("join evt-old-plain (no flash sale) = %d, want 404", code)
			}
		})
	}
}

// listedCatalog is a catalog serving one page of events over gRPC.
type listedCatalog struct {
	catalogv1.UnimplementedCatalogServer
	events []*catalogv1.Event
}

func (c *listedCatalog) ListEvents(context.Context, *catalogv1.ListEventsRequest) (*catalogv1.ListEventsResponse, error) {
	return &catalogv1.ListEventsResponse{Events: c.events, Page: &commonv1.PageResponse{}}, nil
}

// serveCatalog serves a catalog of events on a loopback port until the test ends, and
// returns its address.
func serveCatalog(t *testing.T, events ...*catalogv1.Event) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	catalogv1.RegisterCatalogServer(srv, &listedCatalog{events: events})
	go srv.Serve(lis) //nolint:errcheck // returns when Stop closes the listener
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// catalogClient is a client of serveCatalog(events).
func catalogClient(t *testing.T, events ...*catalogv1.Event) catalogv1.EventLister {
	t.Helper()
	conn, err := grpc.NewClient(serveCatalog(t, events...), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return catalogv1.NewCatalogClient(conn)
}
