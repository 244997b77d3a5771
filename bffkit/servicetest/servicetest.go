// Package servicetest runs fake BoxOffice services for the BFFs' tests, as net/http/httptest
// runs fake HTTP servers: each is a real gRPC server on its own loopback port, serving the
// generated interface from data held in memory, counting its calls by method, and able to go
// down (Stop) so a test sees what a client sees when a service is unreachable.
//
// The fakes keep the contracts the BFFs rely on (a user in the identity metadata for a fan's
// calls, batch answers in request order, NOT_FOUND and ALREADY_EXISTS where the real services
// answer them) and nothing more: the services' own tests hold the real rules.
package servicetest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/grpcclient"
	"boxoffice.dev/platform/identity"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// Epoch is when the first fake event starts; the others follow a day apart.
var Epoch = time.Date(2030, 3, 1, 20, 0, 0, 0, time.UTC)

// Services is one fake of each service a BFF calls, all over the same data.
type Services struct {
	Catalog      *Server
	Inventory    *Server
	Waitroom     *Server
	Order        *Server
	Search       *Server
	Notification *Server
	Assistant    *Server

	Data *Data
}

// Start runs every fake with events fake events ("evt-001"…) at three venues, and stops
// them when the test ends.
func Start(t testing.TB, events int) *Services {
	t.Helper()
	d := NewData(events)
	s := &Services{Data: d}
	s.Catalog = serve(t, "catalog", func(g *grpc.Server) { catalogv1.RegisterCatalogServer(g, &catalog{d: d}) })
	s.Inventory = serve(t, "inventory", func(g *grpc.Server) { inventoryv1.RegisterInventoryServer(g, &inventory{d: d}) })
	s.Waitroom = serve(t, "waitroom", func(g *grpc.Server) { waitroomv1.RegisterWaitroomServer(g, &waitroom{d: d}) })
	s.Order = serve(t, "order", func(g *grpc.Server) { orderv1.RegisterOrderServer(g, &order{d: d}) })
	s.Search = serve(t, "search", func(g *grpc.Server) { searchv1.RegisterSearchServer(g, &search{d: d}) })
	s.Notification = serve(t, "notification", func(g *grpc.Server) { notificationv1.RegisterNotificationServer(g, &notification{d: d}) })
	s.Assistant = serve(t, "assistant", func(g *grpc.Server) { assistantv1.RegisterAssistantServer(g, &assistant{d: d}) })
	return s
}

// Env is the environment that points a BFF at the fakes: CATALOG_GRPC_ADDR and the others.
func (s *Services) Env() map[string]string {
	return map[string]string{
		"CATALOG_GRPC_ADDR":      s.Catalog.Addr,
		"INVENTORY_GRPC_ADDR":    s.Inventory.Addr,
		"WAITROOM_GRPC_ADDR":     s.Waitroom.Addr,
		"ORDER_GRPC_ADDR":        s.Order.Addr,
		"SEARCH_GRPC_ADDR":       s.Search.Addr,
		"NOTIFICATION_GRPC_ADDR": s.Notification.Addr,
		"ASSISTANT_GRPC_ADDR":    s.Assistant.Addr,
	}
}

// Calls is how many calls every fake has received, by full method name
// ("/boxoffice.catalog.v1.Catalog/BatchGetVenues").
func (s *Services) Calls() map[string]int {
	all := map[string]int{}
	for _, srv := range []*Server{s.Catalog, s.Inventory, s.Waitroom, s.Order, s.Search, s.Notification, s.Assistant} {
		for m, n := range srv.Calls() {
			all[m] += n
		}
	}
	return all
}

// Total is the number of calls every fake has received.
func (s *Services) Total() int {
	n := 0
	for _, c := range s.Calls() {
		n += c
	}
	return n
}

// Server is one fake service's gRPC server. Its methods are safe for concurrent use.
type Server struct {
	Name string
	Addr string // host:port; it refuses connections after Stop

	grpc *grpc.Server

	mu      sync.Mutex
	calls   map[string]int
	users   map[string]string // the user metadata of each method's last call
	latency time.Duration     // see SetLatency

	stop    sync.Once
	stopped chan struct{} // closed by Stop
}

func serve(t testing.TB, name string, register func(*grpc.Server)) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("servicetest: listen for %s: %v", name, err)
	}
	s := &Server{Name: name, Addr: l.Addr().String(), calls: map[string]int{}, users: map[string]string{}, stopped: make(chan struct{})}
	s.grpc = grpc.NewServer(grpc.ChainUnaryInterceptor(s.count))
	register(s.grpc)
	go func() { _ = s.grpc.Serve(l) }()
	t.Cleanup(s.Stop)
	return s
}

// count records a call before handling it, and holds its answer back for the latency.
func (s *Server) count(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	s.mu.Lock()
	s.calls[info.FullMethod]++
	s.users[info.FullMethod] = identity.FromIncomingContext(ctx).User
	latency := s.latency
	s.mu.Unlock()
	resp, err := handler(ctx, req)
	if latency > 0 {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.stopped:
		}
	}
	return resp, err
}

// SetLatency makes this fake answer every call d after doing it, as a loaded service does:
// the work is done at once, whatever the caller's deadline, and only the answer is late.
// A caller that gives up sooner loses the answer to a call that took effect. 0 = at once.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Calls is how many calls this fake has received, by full method name.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for m, n := range s.calls {
		out[m] = n
	}
	return out
}

// Total is the number of calls this fake has received.
func (s *Server) Total() int {
	n := 0
	for _, c := range s.Calls() {
		n += c
	}
	return n
}

// LastUser is the user in the identity metadata of method's last call ("" = none).
func (s *Server) LastUser(method string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[method]
}

// Stop takes the service down, as a crash would: calls in flight fail and new connections
// are refused. Stopping twice is harmless.
func (s *Server) Stop() {
	s.stop.Do(func() { close(s.stopped) })
	s.grpc.Stop()
}

// user is the calling fan, or UNAUTHENTICATED as the real services answer without one.
func user(ctx context.Context) (string, error) {
	if u := identity.FromIncomingContext(ctx).User; u != "" {
		return u, nil
	}
	return "", status.Error(codes.Unauthenticated, "sign in first")
}

func notFound(what, id string) error {
	return status.Error(codes.NotFound, fmt.Sprintf("no %s %s", what, id))
}

// Dial connects to the fake as a BFF does (platform/grpcclient, with timeout on each call),
// and closes the connection when the test ends.
func (s *Server) Dial(t testing.TB, timeout time.Duration) *grpc.ClientConn {
	t.Helper()
	conn, err := grpcclient.Dial(s.Addr, grpcclient.Options{Timeout: timeout, Service: s.Name})
	if err != nil {
		t.Fatalf("servicetest: dial %s: %v", s.Name, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// CallsDuring runs f and returns the calls every fake received meanwhile, by method name
// without its service ("BatchGetVenues").
func (s *Services) CallsDuring(f func()) map[string]int {
	before := s.Calls()
	f()
	out := map[string]int{}
	for m, n := range s.Calls() {
		if d := n - before[m]; d > 0 {
			out[m[strings.LastIndexByte(m, '/')+1:]] += d
		}
	}
	return out
}
