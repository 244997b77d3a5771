package order

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"testing"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/catalog"
	"boxoffice.dev/services/inventory"
	"boxoffice.dev/services/notification"
	"boxoffice.dev/services/payment"
)

// system is the part of BoxOffice an order touches, each service a real process in-process
// on free loopback ports, sharing one embedded NATS server: catalog (prices), inventory
// (holds), payment, notification and order itself.
type system struct {
	nats                                      string
	catalog, inventory, payment, notification *process
	order                                     *process
}

// process is one running service of the system, named in failure messages.
type process struct {
	*testkit.Process
	name string
}

// startProcess runs one service (testkit.RunProcess) on the system's NATS, with extra
// variables, and waits for its /healthz.
func startProcess(t *testing.T, name string, run server.RunFunc, nats string, extra map[string]string) *process {
	t.Helper()
	env := map[string]string{"NATS_URL": nats}
	maps.Copy(env, extra)
	return &process{Process: testkit.RunProcess(t, run, env), name: name}
}

// startSystem starts every service; orderEnv and paymentEnv add to those two's variables.
func startSystem(t *testing.T, orderEnv, paymentEnv map[string]string) *system {
	t.Helper()
	s := &system{nats: testkit.StartNATS(t).ClientURL()}
	s.catalog = startProcess(t, "catalog", catalog.Run, s.nats, nil)
	// Inventory catches up with this catalog, not with whatever may listen on its default port.
	s.inventory = startProcess(t, "inventory", inventory.Run, s.nats, map[string]string{"CATALOG_GRPC_ADDR": s.catalog.GRPCAddr})
	s.payment = startProcess(t, "payment", payment.Run, s.nats, paymentEnv)
	s.notification = startProcess(t, "notification", notification.Run, s.nats, nil)
	env := map[string]string{"PAYMENT_GRPC_ADDR": s.payment.GRPCAddr, "INVENTORY_GRPC_ADDR": s.inventory.GRPCAddr,
		"CATALOG_GRPC_ADDR": s.catalog.GRPCAddr}
	maps.Copy(env, orderEnv)
	s.order = startProcess(t, "order", Run, s.nats, env)
	return s
}

// Ticket classes of the test event: one priced to succeed, one whose amount payment declines
// (minor units ending in 13).
const (
	classOK      = "ga-floor"
	classDecline = "ga-decline"
)

// addEvent creates an event in catalog with the two GA classes of capacity seats each, and
// its seat map in inventory, and returns its id.
func (s *system) addEvent(t *testing.T, seats int) string {
	t.Helper()
	var venue struct{ ID string }
	s.catalog.do(t, http.MethodPost, "/v1/admin/venues", "", map[string]any{
		"name": "Sala Teste", "city": "São Paulo", "country": "BR", "capacity": 2 * seats,
	}, http.StatusCreated, &venue)
	starts := time.Now().Add(30 * 24 * time.Hour).UTC()
	var event struct{ ID string }
	s.catalog.do(t, http.MethodPost, "/v1/admin/events", "", map[string]any{
		"title": "Order saga test", "venue_id": venue.ID,
		"starts_at": starts.Format(time.RFC3339), "on_sale_at": starts.Add(-60 * 24 * time.Hour).Format(time.RFC3339),
		"ticket_classes": []map[string]any{
			{"id": classOK, "name": "Pista", "price": money.Money{Currency: "BRL", Minor: 12550}, "capacity": seats},
			{"id": classDecline, "name": "Pista (declined)", "price": money.Money{Currency: "BRL", Minor: 9913}, "capacity": seats},
		},
	}, http.StatusCreated, &event)
	s.inventory.do(t, http.MethodPut, "/v1/admin/events/"+event.ID+"/seatmap", "", map[string]any{
		"ga": []map[string]any{{"class": classOK, "capacity": seats}, {"class": classDecline, "capacity": seats}},
	}, http.StatusOK, nil)
	return event.ID
}

// hold places a one-ticket hold of class for account through inventory's REST API.
func (s *system) hold(t *testing.T, eventID, account, class string) string {
	t.Helper()
	var h struct{ ID string }
	s.inventory.do(t, http.MethodPost, "/v1/events/"+eventID+"/holds", account,
		map[string]any{"class": class, "quantity": 1}, http.StatusCreated, &h)
	return h.ID
}

// do sends a JSON request as account ("" = anonymous), checks the status and decodes the
// answer into out (nil = discard).
func (p *process) do(t testing.TB, method, path, account string, body any, want int, out any) http.Header {
	t.Helper()
	code, h, raw := p.send(t, method, path, account, nil, body)
	if code != want {
		t.Fatalf("%s %s %s = %d %s, want %d", p.name, method, path, code, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s %s: decode %s: %v", p.name, method, path, raw, err)
		}
	}
	return h
}

// send is do without the checks: it returns the status, headers and body.
func (p *process) send(t testing.TB, method, path, account string, headers map[string]string, body any) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.HTTPURL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if account != "" {
		req.Header.Set(identity.HeaderUser, account)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", p.name, method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, raw
}

// order fetches account's order id over REST.
func (s *system) orderOf(t testing.TB, account, id string) Order {
	t.Helper()
	var o Order
	s.order.do(t, http.MethodGet, "/v1/orders/"+id, account, nil, http.StatusOK, &o)
	return o
}
