package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/playground/load"
)

// flashSale is a fan's journey through an on-sale, each arrival one fan: join the waiting
// room, poll it until admitted, hold a seat with the admission pass (another seat after a
// conflict), then order it with an Idempotency-Key. Greedy fans first hammer the hold
// endpoint without a pass, as a scalper's script does, through REST or either BFF's GraphQL
// (the script_holds_via knob), and meet the gateway's per-account limit either way. Each run
// creates its own event (catalog), seat map (inventory) and queue (waitroom), so runs
// repeat; at the end it reads back every order and the seat map and counts the seats sold
// and any oversold.
type flashSale struct {
	event   string
	seats   []string // every seat id of the layout
	classID string

	mu     sync.Mutex
	orders []placedOrder
	// mostPassed is the most hold attempts one script got past the gateway's limits.
	mostPassed int
	// misspoke reports, once, a script operation a BFF could not read.
	misspoke sync.Once
}

// placedOrder is an order a fan placed: who, for which seats.
type placedOrder struct {
	id    string
	token string
	seats []string
}

var _ driver = (*flashSale)(nil)

// Seats are laid out in rows of seatsPerRow in one section.
const seatsPerRow = 20

func (fs *flashSale) setup(ctx context.Context, r *Run) error {
	spec := r.sc.FlashSale
	fs.event = fmt.Sprintf("evt-flash-%d", r.o.Now().UnixMilli())
	fs.classID = "floor"
	rows := (spec.Seats + seatsPerRow - 1) / seatsPerRow
	for row := 1; row <= rows; row++ {
		for n := 1; n <= seatsPerRow; n++ {
			fs.seats = append(fs.seats, fmt.Sprintf("A-%d-%d", row, n))
		}
	}
	if err := fs.createEvent(ctx, r, rows*seatsPerRow); err != nil {
		return err
	}
	layout := map[string]any{
		"flash_sale": true,
		"sections":   []map[string]any{{"id": "A", "class": fs.classID, "rows": rows, "seats_per_row": seatsPerRow}},
	}
	if err := fs.internal(ctx, r, "inventory", http.MethodPut, "/v1/admin/events/"+fs.event+"/seatmap", layout, nil); err != nil {
		return fmt.Errorf("seat map: %w", err)
	}
	r.event(0, "setup", fmt.Sprintf("flash-sale event %s: %d seats", fs.event, rows*seatsPerRow))
	if err := r.identities(ctx); err != nil {
		return err
	}
	return nil
}

// createEvent copies the demo flash-sale event's venue and dates into a new event with one
// seated class of capacity seats, on sale now.
func (fs *flashSale) createEvent(ctx context.Context, r *Run, capacity int) error {
	var demo map[string]any
	if err := fs.internal(ctx, r, "catalog", http.MethodGet, "/v1/events/evt-flash", nil, &demo); err != nil {
		return fmt.Errorf("read the demo flash-sale event: %w", err)
	}
	now := r.o.Now().UTC()
	body := map[string]any{
		"id": fs.event, "title": "Playground flash sale " + now.Format("15:04:05"),
		"description": "Created by the flash-sale scenario.", "performers": demo["performers"],
		"venue_id": demo["venue_id"], "starts_at": demo["starts_at"], "on_sale_at": now.Add(-time.Minute).Format(time.RFC3339),
		"flash_sale": true, "tags": []string{"playground"},
		"ticket_classes": []map[string]any{{
			"id": fs.classID, "name": "Floor", "price": map[string]any{"currency": "BRL", "minor": 25000},
			"seated": true, "capacity": capacity,
		}},
	}
	if err := fs.internal(ctx, r, "catalog", http.MethodPost, "/v1/admin/events", body, nil); err != nil {
		return fmt.Errorf("create event: %w", err)
	}
	return nil
}

// internal calls a service's admin API as the internal tenant: directly, with the identity
// headers the gateway would set, when the target lists the service's instances; else through
// the gateway with the internal partner's API key.
func (fs *flashSale) internal(ctx context.Context, r *Run, service, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	url := r.target.Gateway + path
	direct := len(r.target.Services[service]) > 0
	if direct {
		url = r.target.Services[service][0] + path
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if direct {
		identity.Identity{Tenant: "backstage", Plan: "internal"}.Set(req.Header)
	} else {
		for _, p := range r.target.Partners {
			if p.Plan == "internal" {
				req.Header.Set("X-Api-Key", p.APIKey)
			}
		}
	}
	resp, err := r.sys.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b.Bytes()))
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// setAdmitRate puts the admit_rate knob in force in the waiting room.
func (fs *flashSale) setAdmitRate(ctx context.Context, r *Run) error {
	if fs.event == "" {
		return nil // set-up applies it once the event exists
	}
	return fs.internal(ctx, r, "waitroom", http.MethodPut, "/v1/admin/events/"+fs.event+"/queue",
		map[string]int{"admit_per_second": r.knobInt("admit_rate")}, nil)
}

func (fs *flashSale) job(r *Run, s *stream) func(ctx context.Context, c *load.Client, n int64) {
	spec := r.sc.FlashSale
	base := r.target.Gateway + "/v1/events/" + fs.event
	poll := spec.PollEvery.D()
	if poll <= 0 {
		poll = time.Second
	}
	wait := spec.QueueTimeout.D()
	if wait <= 0 {
		wait = 30 * time.Second
	}
	attempts := max(spec.HoldAttempts, 1)
	return func(ctx context.Context, c *load.Client, n int64) {
		id := s.ids[s.identity(n)]
		send := func(method, url string, body any, hdr map[string]string) *load.Response {
			return c.Once(ctx, func(ctx context.Context) (*http.Request, error) {
				var b []byte
				if body != nil {
					b, _ = json.Marshal(body)
				}
				req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
				if err != nil {
					return nil, err
				}
				id.Apply(req)
				if body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				return req, nil
			})
		}

		// A greedy fan's script tries to hold seats before queueing, through the door the
		// script_holds_via knob says. Every attempt the gateway does not refuse with 429
		// counts as passed, a timeout too: it may have reached inventory.
		if c.Rand() < spec.GreedyShare {
			c.Recorder().Count("greedy_fans", 1)
			door := scriptDoor(r.knob("script_holds_via"), c.Rand)
			passed := 0
			for range spec.GreedyAttempts {
				url, body := scriptHold(door, r.target.Gateway, fs.event, fs.pick(c))
				resp := send(http.MethodPost, url, body, nil)
				c.Recorder().Count("script_holds:"+door, 1)
				if resp.Status != http.StatusTooManyRequests {
					passed++
				}
				if why := unreadable(resp.Status, resp.Body); why != "" && door != viaREST {
					fs.misspoke.Do(func() {
						r.event(r.rec.Elapsed(), "error", "the "+door+" BFF cannot read a script's placeHold: "+why)
					})
				}
			}
			fs.mu.Lock()
			fs.mostPassed = max(fs.mostPassed, passed)
			fs.mu.Unlock()
		}

		// The waiting room: join, then poll until admitted.
		var st struct {
			Status string `json:"status"`
			Pass   string `json:"pass"`
		}
		resp := send(http.MethodPost, base+"/queue", nil, nil)
		if resp.Outcome != load.OK || json.Unmarshal(resp.Body, &st) != nil {
			return
		}
		c.Recorder().Count("joined", 1)
		deadline := c.Now().Add(wait)
		for st.Status != "admitted" {
			if c.Now().After(deadline) || c.Sleep(ctx, poll) != nil {
				c.Recorder().Count("gave_up_waiting", 1)
				return
			}
			resp = send(http.MethodGet, base+"/queue/me", nil, nil)
			if resp.Outcome == load.OK {
				_ = json.Unmarshal(resp.Body, &st)
			}
		}
		c.Recorder().Count("admitted", 1)

		// Hold a seat; a conflict means someone was faster: try another.
		var hold struct {
			ID    string   `json:"id"`
			Seats []string `json:"seats"`
		}
		held := false
		for range attempts {
			resp = send(http.MethodPost, base+"/holds", map[string]any{"seats": []string{fs.pick(c)}},
				map[string]string{"X-Admission-Pass": st.Pass})
			if resp.Outcome == load.OK && json.Unmarshal(resp.Body, &hold) == nil {
				held = true
				break
			}
			if resp.Status != http.StatusConflict {
				break // refused (429, 403) or failed: this fan gives up
			}
		}
		if !held {
			return
		}
		c.Recorder().Count("holds", 1)

		// Order it. The Idempotency-Key makes a retried order the same order.
		var order struct {
			ID string `json:"id"`
		}
		resp = send(http.MethodPost, r.target.Gateway+"/v1/orders", map[string]string{"hold_id": hold.ID},
			map[string]string{"Idempotency-Key": "playground-" + hold.ID})
		if resp.Outcome != load.OK || json.Unmarshal(resp.Body, &order) != nil {
			return
		}
		c.Recorder().Count("orders", 1)
		fs.mu.Lock()
		fs.orders = append(fs.orders, placedOrder{id: order.ID, token: id.Token, seats: hold.Seats})
		fs.mu.Unlock()
	}
}

// pick draws a seat of the layout at random: fans in a flash sale click what they see, and
// collide.
func (fs *flashSale) pick(c *load.Client) string {
	return fs.seats[int(c.Rand()*float64(len(fs.seats)))%len(fs.seats)]
}

// seatCounts is the seat map's tally from inventory.
type seatCounts struct {
	Total, Available, Held, Sold int
}

func (fs *flashSale) seatMap(ctx context.Context, r *Run) (seatCounts, map[string]string, error) {
	var m struct {
		Counts   seatCounts `json:"counts"`
		Sections []struct {
			Rows []struct {
				Seats []struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				} `json:"seats"`
			} `json:"rows"`
		} `json:"sections"`
	}
	if err := fs.internal(ctx, r, "inventory", http.MethodGet, "/v1/events/"+fs.event+"/seats", nil, &m); err != nil {
		return seatCounts{}, nil, err
	}
	status := map[string]string{}
	for _, s := range m.Sections {
		for _, row := range s.Rows {
			for _, seat := range row.Seats {
				status[seat.ID] = seat.Status
			}
		}
	}
	return m.Counts, status, nil
}

// poll reads the queue's length and the seats sold and held, every second.
func (fs *flashSale) poll(ctx context.Context, r *Run) map[string]float64 {
	out := map[string]float64{}
	var q struct {
		Waiting  int64 `json:"waiting"`
		Admitted int64 `json:"admitted"`
	}
	if fs.internal(ctx, r, "waitroom", http.MethodGet, "/v1/admin/events/"+fs.event+"/queue", nil, &q) == nil {
		out["queue_length"] = float64(q.Waiting)
	}
	if c, _, err := fs.seatMap(ctx, r); err == nil {
		out["seats_sold"] = float64(c.Sold)
		out["seats_held"] = float64(c.Held)
	}
	return out
}

// finish waits for the orders to settle (the saga charges and confirms after the 201), then
// counts what was sold and whether anything was sold beyond capacity or twice.
func (fs *flashSale) finish(ctx context.Context, r *Run) {
	fs.mu.Lock()
	orders := append([]placedOrder(nil), fs.orders...)
	mostPassed := fs.mostPassed
	fs.mu.Unlock()

	states := map[string]string{}
	deadline := r.o.Now().Add(20 * time.Second)
	for {
		pending := 0
		for i, o := range orders {
			if s := states[o.id]; s == "confirmed" || s == "failed" {
				continue
			}
			var got struct {
				State string `json:"state"`
			}
			if err := fs.asFan(ctx, r, i, o.token, "/v1/orders/"+o.id, &got); err == nil {
				states[o.id] = got.State
			}
			if s := states[o.id]; s != "confirmed" && s != "failed" {
				pending++
			}
		}
		if pending == 0 || r.o.Now().After(deadline) || r.o.Sleep(ctx, 500*time.Millisecond) != nil {
			break
		}
	}

	counts, status, err := fs.seatMap(ctx, r)
	if err != nil {
		r.event(r.rec.Elapsed(), "error", "read the seat map: "+err.Error())
		return
	}
	confirmed, unsettled := 0, 0
	owners := map[string]int{}
	for _, o := range orders {
		switch states[o.id] {
		case "confirmed":
			confirmed++
			for _, s := range o.seats {
				owners[s]++
			}
		case "failed":
		default:
			unsettled++
		}
	}
	// Oversold: more seats sold than exist, a seat in two confirmed orders, or a confirmed
	// order's seat that inventory does not show as sold.
	oversold := max(counts.Sold-counts.Total, 0)
	for seat, n := range owners {
		if n > 1 {
			oversold += n - 1
		}
		if status[seat] != "sold" {
			oversold++
		}
	}
	final := map[string]float64{
		"seats_sold": float64(counts.Sold), "seats_total": float64(counts.Total), "oversold": float64(oversold),
		"orders_confirmed": float64(confirmed), "orders_unsettled": float64(unsettled),
		"most_script_holds_passed": float64(mostPassed),
	}
	r.setFinal(final)
	r.event(r.rec.Elapsed(), "setup", fmt.Sprintf("tally: %d of %d seats sold, %d orders confirmed, oversold %d",
		counts.Sold, counts.Total, confirmed, oversold))
}

// asFan GETs path through the gateway with a fan's token, from the n-th of the tally's own
// fake IPs (the per-IP limit is not what the tally measures).
func (fs *flashSale) asFan(ctx context.Context, r *Run, n int, token, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.target.Gateway+path, nil)
	if err != nil {
		return err
	}
	load.Identity{IP: load.FakeIP(800_000 + n), Token: token}.Apply(req)
	resp, err := r.sys.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
