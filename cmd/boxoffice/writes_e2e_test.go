package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/bffkit/graphqltest"
	"boxoffice.dev/bffkit/upstream"
	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/auth"
)

// The timings of TestWritesExactlyOnceThroughTheBFFs. The BFFs bound a read by 800 ms and a
// write by BFF_WRITE_TIMEOUT, set here to writeTimeout.
const (
	writeTimeout = 2 * time.Second
	// slow is a service's injected latency above the BFFs' 800 ms read deadline and below
	// writeTimeout: a write waits for it and is answered.
	slow = 1200 * time.Millisecond
	// stalled is above writeTimeout: the BFF gives up first and answers OUTCOME_UNKNOWN.
	stalled = 3 * time.Second
)

// patience is how long a client waits for each attempt's answer before it calls the answer
// lost and retries with the same key. The first is the BFFs' old 800 ms: under slow that
// answer never comes in time, while its request goes on and the write is done, so the retry
// must find that write rather than make a second.
var patience = []time.Duration{800 * time.Millisecond, 10 * time.Second, 10 * time.Second}

// TestWritesExactlyOnceThroughTheBFFs runs `boxoffice up`, makes inventory and order slow or
// stalled, and has fans of both apps place holds and orders through the gateway as a careful
// client does: each write with its own idempotency key, retried with that key after a lost
// answer or OUTCOME_UNKNOWN. Then it counts what the services' own stores hold for each fan:
// exactly the holds and orders the fan was told of, one per key.
func TestWritesExactlyOnceThroughTheBFFs(t *testing.T) {
	u := startUpWith(t, t.TempDir(), freeOffset(t), map[string]string{"BFF_WRITE_TIMEOUT": writeTimeout.String()})
	t.Cleanup(func() { u.stop(t) })
	gw := &frontDoor{t: t, url: u.ep.Gateway}
	inventory, order := u.ep.Services["inventory"], u.ep.Services["order"]

	// Six fans, mobile and web in turn, each with a seat of its own. A fan places one hold
	// and one order, well inside the gateway's 5 hold and 5 order attempts per account
	// however many retries they take.
	fans := make([]*fan, 6)
	for i := range fans {
		email := auth.DemoEmail(i + 1)
		fans[i] = &fan{email: email, app: apps[i%len(apps)], token: gw.login(email)}
	}
	seats := freeSeats(t, gw, fans[0].token, len(fans))
	for i, f := range fans {
		f.seat = seats[i]
	}
	c := &client{url: u.ep.Gateway, http: &http.Client{Timeout: 30 * time.Second}}

	// Each step is one write of every fan in a group, while its service is slow or stalled.
	steps := []struct {
		what    string
		service []string
		write   func(*fan) (*write, []byte)
	}{
		{"hold", inventory, (*fan).placeHold},
		{"order", order, (*fan).createOrder},
	}
	slowFans, lostFans := fans[:4], fans[4:]
	for _, step := range steps {
		t.Run(step.what+"s while the service is slower than a read may be", func(t *testing.T) {
			setLatency(t, step.service, slow)
			each(slowFans, func(f *fan) {
				w, body := step.write(f)
				w.try(c, f, body, patience...)
			})
			for _, f := range slowFans {
				w, _ := step.write(f)
				if w.id == "" || w.lost == 0 {
					t.Errorf("%s's %s = %+v, want an id after a first answer lost (%v of latency, %v of patience)", f.email, step.what, *w, slow, patience[0])
				}
			}
		})
	}
	for _, step := range steps {
		t.Run(step.what+"s whose answer the BFF loses", func(t *testing.T) {
			// One attempt, waited for until the BFF has given up and said so.
			setLatency(t, step.service, stalled)
			each(lostFans, func(f *fan) {
				w, body := step.write(f)
				w.try(c, f, body, stalled+writeTimeout)
			})
			for _, f := range lostFans {
				if w, _ := step.write(f); w.unknown != 1 || w.id != "" || !strings.Contains(w.message, upstream.RetryKeyed) {
					t.Errorf("%s's %s while the service stalls = %+v, want one %s saying %q", f.email, step.what, *w, upstream.CodeOutcomeUnknown, upstream.RetryKeyed)
				}
			}
			setLatency(t, step.service, 0)
			each(lostFans, func(f *fan) {
				w, body := step.write(f)
				w.try(c, f, body, patience...)
			})
			for _, f := range lostFans {
				if w, _ := step.write(f); w.id == "" {
					t.Errorf("%s's %s once the service is back = %+v, want an id", f.email, step.what, *w)
				}
			}
		})
	}

	// An attempt whose answer was lost may still be running; count once every one is over.
	testkit.Eventually(t, 35*time.Second, "every abandoned attempt finished", func() bool { return c.inflight.Load() == 0 })
	for _, f := range fans {
		t.Logf("%s on %s: hold %+v, order %+v", f.email, f.app.path, f.hold, f.order)
		checkStores(t, gw, f)
	}
}

// fan is a signed-in demo fan using one app, and what that app was told of its writes.
type fan struct {
	email, token string
	app          app
	seat         string // of evt-001, its own: no fan's hold takes another's
	hold, order  write
}

// placeHold is f's hold of its seat, and the request that places it.
func (f *fan) placeHold() (*write, []byte) {
	return &f.hold, request(f.app.hold, map[string]any{"event": "evt-001", "seats": []string{f.seat}, "key": "hold-1"})
}

// createOrder is f's order of its hold, and the request that places it.
func (f *fan) createOrder() (*write, []byte) {
	return &f.order, request(f.app.order, map[string]any{"hold": f.hold.id, "key": "order-1"})
}

func request(query string, vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return b
}

// app is one BFF, as its client spells the two writes. Each mutation answers its object's
// id under the alias w, and takes the idempotency key as $key.
type app struct {
	path  string
	hold  string // holds $seats of $event
	order string // orders $hold
}

var apps = []app{
	{
		path:  "/graphql/mobile",
		hold:  `mutation($event: ID!, $seats: [ID!], $key: String) { w: placeHold(eventId: $event, seats: $seats, idempotencyKey: $key) { id } }`,
		order: `mutation($hold: ID!, $key: String!) { w: createOrder(holdId: $hold, idempotencyKey: $key) { id } }`,
	},
	{
		path:  "/graphql/web",
		hold:  `mutation($event: ID!, $seats: [ID!], $key: String) { w: placeHold(input: {eventId: $event, seats: $seats, idempotencyKey: $key}) { id } }`,
		order: `mutation($hold: ID!, $key: String!) { w: checkout(holdId: $hold, idempotencyKey: $key) { id } }`,
	},
}

// write is one write a fan means to make once, and what its attempts were answered.
type write struct {
	id      string // the id a successful answer reported; "" while none has
	failed  string // the error of an answer that said the write was refused
	lost    int    // attempts whose answer did not come within the client's patience
	unknown int    // attempts answered OUTCOME_UNKNOWN
	message string // the last OUTCOME_UNKNOWN's message
}

// try sends body, f's request of w with its key, one attempt per patience, until one is
// answered with an id or refused. A lost answer or OUTCOME_UNKNOWN leads to the next
// attempt, with the same body and so the same key.
func (w *write) try(c *client, f *fan, body []byte, patience ...time.Duration) {
	for _, wait := range patience {
		if w.id != "" || w.failed != "" {
			return
		}
		var res result
		select {
		case res = <-c.send(f, body):
		case <-time.After(wait):
			w.lost++ // the request goes on: only its answer is lost
			continue
		}
		switch {
		case res.err != nil:
			w.lost++
		case res.unknown != "":
			w.unknown++
			w.message = res.unknown
		case res.id != "":
			w.id = res.id
		default:
			w.failed = res.failed
		}
	}
}

// client sends a fan's GraphQL writes through the gateway. It counts the attempts still
// running, including those whose answer it no longer waits for.
type client struct {
	url      string
	http     *http.Client
	inflight atomic.Int64
}

// result is one attempt's answer: an id, OUTCOME_UNKNOWN's message, a refusal, or a
// transport error.
type result struct {
	id, unknown, failed string
	err                 error
}

// send posts body as f and delivers the answer on the channel; the request runs to its end
// (the client's 30 s timeout at most) whether or not anyone still waits for it.
func (c *client) send(f *fan, body []byte) <-chan result {
	out := make(chan result, 1)
	c.inflight.Add(1)
	go func() {
		defer c.inflight.Add(-1)
		out <- c.post(f, body)
	}()
	return out
}

func (c *client) post(f *fan, body []byte) result {
	req, err := http.NewRequest(http.MethodPost, c.url+f.app.path, bytes.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.token)
	res, err := c.http.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return result{err: err}
	}
	var answer struct {
		Data struct {
			W *struct{ ID string }
		}
		Errors []graphqltest.Error
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &answer) != nil {
		return result{failed: fmt.Sprintf("%d %s", res.StatusCode, b)}
	}
	for _, e := range answer.Errors {
		if e.Code() == upstream.CodeOutcomeUnknown {
			return result{unknown: e.Message}
		}
	}
	if len(answer.Errors) > 0 || answer.Data.W == nil {
		return result{failed: string(b)}
	}
	return result{id: answer.Data.W.ID}
}

// each runs fn for every fan at once and returns when all are done.
func each(fans []*fan, fn func(*fan)) {
	var wg sync.WaitGroup
	for _, f := range fans {
		wg.Go(func() { fn(f) })
	}
	wg.Wait()
}

// setLatency injects latency d into every instance of a service through its control hook,
// and takes it out again when t ends.
func setLatency(t *testing.T, instances []string, d time.Duration) {
	t.Helper()
	put := func(d time.Duration) error {
		for _, u := range instances {
			req, _ := http.NewRequest(http.MethodPut, u+control.Path, strings.NewReader(fmt.Sprintf(`{"latency_ms": %d}`, d.Milliseconds())))
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("PUT %s%s: %w", u, control.Path, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("PUT %s%s = %d, want 200", u, control.Path, res.StatusCode)
			}
		}
		return nil
	}
	if err := put(d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := put(0); err != nil {
			t.Error(err)
		}
	})
}

// freeSeats returns n available seats of evt-001, from the web app's seat map.
func freeSeats(t *testing.T, gw *frontDoor, token string, n int) []string {
	t.Helper()
	var page struct {
		Event struct {
			SeatMap struct {
				Sections []struct {
					Rows []struct {
						Seats []struct{ ID, Status string }
					}
				}
			}
		}
	}
	gw.query(t, "/graphql/web", token, `{ event(id: "evt-001") { seatMap { sections { rows { seats { id status } } } } } }`, nil, &page)
	var free []string
	for _, sec := range page.Event.SeatMap.Sections {
		for _, row := range sec.Rows {
			for _, seat := range row.Seats {
				if seat.Status == "AVAILABLE" && len(free) < n {
					free = append(free, seat.ID)
				}
			}
		}
	}
	if len(free) != n {
		t.Fatalf("evt-001 has %d available seats, want %d", len(free), n)
	}
	return free
}

// checkStores asks inventory and order, through the gateway as f, for every hold and order
// f has, and fails t unless they are exactly the ones f's app was told of: none a lost
// answer or a retry made unseen, none the app was told of missing. A write refused or left
// unknown was told no id, so anything of it in a store shows up here as untold.
func checkStores(t *testing.T, gw *frontDoor, f *fan) {
	t.Helper()
	var holds struct {
		Holds []struct {
			ID    string   `json:"id"`
			Seats []string `json:"seats"`
		} `json:"holds"`
		Next string `json:"next_cursor"`
	}
	var orders struct {
		Orders []struct {
			ID     string `json:"id"`
			HoldID string `json:"hold_id"`
		} `json:"orders"`
		Next string `json:"next_cursor"`
	}
	getAs(t, gw, f, "/v1/holds?limit=50", &holds)
	getAs(t, gw, f, "/v1/orders?limit=50", &orders)
	if holds.Next != "" || orders.Next != "" {
		t.Fatalf("%s has more than 50 holds or orders", f.email)
	}

	var storedHolds, storedOrders []string
	for _, h := range holds.Holds {
		storedHolds = append(storedHolds, h.ID)
	}
	for _, o := range orders.Orders {
		storedOrders = append(storedOrders, o.ID)
		if o.HoldID != f.hold.id {
			t.Errorf("%s's order %s is for hold %q, want %q", f.email, o.ID, o.HoldID, f.hold.id)
		}
	}
	if want := told(f.hold); !slices.Equal(storedHolds, want) {
		t.Errorf("%s's holds in inventory = %v, want the %v its app was told of (%s: %+v)", f.email, storedHolds, want, f.app.path, f.hold)
	}
	if want := told(f.order); !slices.Equal(storedOrders, want) {
		t.Errorf("%s's orders in order = %v, want the %v its app was told of (%s: %+v)", f.email, storedOrders, want, f.app.path, f.order)
	}
}

// told is the ids w's answers reported: none or one.
func told(w write) []string {
	if w.id == "" {
		return nil
	}
	return []string{w.id}
}

// getAs GETs path through the gateway as f and decodes the JSON answer into out.
func getAs(t *testing.T, gw *frontDoor, f *fan, path string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, gw.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s as %s: %v", path, f.email, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, out) != nil {
		t.Fatalf("GET %s as %s = %d %s", path, f.email, res.StatusCode, b)
	}
}
