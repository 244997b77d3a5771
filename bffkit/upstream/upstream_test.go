package upstream

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"

	"boxoffice.dev/bffkit/servicetest"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

func newServer(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.New(context.Background(), config.Process{Name: "bff-test", LogLevel: "error", ShutdownTimeout: time.Second}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConnect(t *testing.T) {
	svc := servicetest.Start(t, 1)
	s := newServer(t)
	conns, err := Connect(s, Deadlines{Read: time.Second, Write: time.Second}, map[string]string{"catalog": svc.Catalog.Addr, "inventory": svc.Inventory.Addr}, "catalog")
	if err != nil {
		t.Fatalf("Connect = %v", err)
	}
	if _, err := catalogv1.NewCatalogClient(conns["catalog"]).GetEvent(context.Background(), &catalogv1.GetEventRequest{Id: "evt-001"}); err != nil {
		t.Errorf("GetEvent through the catalog connection = %v", err)
	}
	if r := s.Health.Ready(context.Background()); !r.Ready || r.Checks["catalog"] != "ok" || len(r.Checks) != 1 {
		t.Errorf("readiness = %+v, want ready on the catalog check alone", r)
	}
	svc.Catalog.Stop()
	// The connection notices the closed transport a moment later.
	testkit.Eventually(t, 5*time.Second, "not ready with the catalog down", func() bool {
		return !s.Health.Ready(context.Background()).Ready
	})
	_ = s.Close()
	for name, conn := range conns {
		if st := conn.(interface{ GetState() connectivity.State }).GetState(); st != connectivity.Shutdown {
			t.Errorf("%s connection after Close = %v, want shut down", name, st)
		}
	}

	if _, err := Connect(newServer(t), Deadlines{Read: time.Second}, map[string]string{"inventory": svc.Inventory.Addr}, "catalog"); err == nil {
		t.Error("Connect without the essential service's address = nil error, want one")
	}
}
