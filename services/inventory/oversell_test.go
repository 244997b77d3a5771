package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// The flash-sale bar: 2,000 fans (one account each) try to hold seats of a 100-seat event
// at once, through two inventory instances sharing one database. Exactly 100 seats end up
// held, none twice; when the holds expire, every seat is for sale again.
const (
	fans        = 2000
	seatsOnSale = 100
	inFlight    = 64 // concurrent requests: plenty of contention, kind to two cores
)

func TestNeverOversellsAcrossTwoInstances(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		stores := []*Store{newStore(t, db, clk), newStore(t, secondHandle(t, db), clk)}
		var instances []*httptest.Server
		for _, s := range stores {
			srv := httptest.NewServer(routes(slog.New(slog.DiscardHandler), s).Mux())
			t.Cleanup(srv.Close)
			instances = append(instances, srv)
		}
		putSeatMap(t, stores[0], "evt-flash", Layout{Sections: []SectionLayout{
			{ID: "A", Class: "plateia", Rows: 5, SeatsPerRow: 10},
			{ID: "B", Class: "balcao", Rows: 5, SeatsPerRow: 10},
		}})
		seat := func(i int) string { return SeatID(string(rune('A'+i/50)), i%50/10+1, i%10+1) }

		// Three fans in four ask for one seat, every seat by at least one of them, so each
		// seat ends up held whoever wins it; the rest ask for two, so all-or-nothing claims
		// collide with single ones. The order is shuffled, deterministically.
		type attempt struct {
			account string
			seats   []string
		}
		attempts := make([]attempt, fans)
		for i := range attempts {
			a := attempt{account: fmt.Sprintf("acc-%04d", i), seats: []string{seat(i % seatsOnSale)}}
			if i >= fans*3/4 {
				a.seats = append(a.seats, seat((i*37+11)%seatsOnSale))
				if a.seats[0] == a.seats[1] {
					a.seats = a.seats[:1]
				}
			}
			attempts[i] = a
		}
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(attempts), func(i, j int) { attempts[i], attempts[j] = attempts[j], attempts[i] })

		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}, Timeout: 30 * time.Second}
		start := time.Now()
		var (
			mu       sync.Mutex
			won      = map[string]string{} // seat → hold id
			holds    []Hold
			statuses = map[int]int{}
			failures []string
		)
		sem := make(chan struct{}, inFlight)
		var wg sync.WaitGroup
		for i, a := range attempts {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				status, h, err := postHold(client, instances[i%2].URL, "evt-flash", a.account, a.seats)
				mu.Lock()
				defer mu.Unlock()
				statuses[status]++
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case status == http.StatusCreated:
					holds = append(holds, h)
					for _, s := range h.Seats {
						if prev, ok := won[s]; ok {
							failures = append(failures, fmt.Sprintf("seat %s held by %s and %s", s, prev, h.ID))
						}
						won[s] = h.ID
					}
				case status != http.StatusConflict:
					failures = append(failures, fmt.Sprintf("%s: status %d", a.account, status))
				}
			})
		}
		wg.Wait()
		t.Logf("%d attempts in %v: %v", fans, time.Since(start).Round(time.Millisecond), statuses)
		if len(failures) > 0 {
			t.Fatalf("%d failures, first: %s", len(failures), failures[0])
		}
		if len(won) != seatsOnSale {
			t.Errorf("seats won = %d, want exactly %d", len(won), seatsOnSale)
		}
		for i, s := range stores {
			m, err := s.SeatMap(ctx, "evt-flash")
			if err != nil {
				t.Fatal(err)
			}
			if want := (Counts{Total: seatsOnSale, Held: seatsOnSale}); m.Counts != want {
				t.Errorf("instance %d sees %+v, want %+v", i, m.Counts, want)
			}
		}
		if n := countRows(t, db, `SELECT count(*) FROM holds WHERE status = 'active'`); n != len(holds) {
			t.Errorf("active holds in the database = %d, want the %d granted", n, len(holds))
		}

		// Every hold expires; two sweepers at once return each seat exactly once.
		clk.Advance(DefaultHoldTTL)
		var expired [2]int
		var sweepers sync.WaitGroup
		for i, s := range stores {
			sweepers.Go(func() {
				for {
					n, err := s.ExpireDue(ctx, 50)
					if err != nil {
						t.Errorf("instance %d: ExpireDue: %v", i, err)
						return
					}
					if expired[i] += n; n == 0 {
						return
					}
				}
			})
		}
		sweepers.Wait()
		if got := expired[0] + expired[1]; got != len(holds) {
			t.Errorf("expired %d + %d holds, want %d in all", expired[0], expired[1], len(holds))
		}
		m, err := stores[1].SeatMap(ctx, "evt-flash")
		if err != nil {
			t.Fatal(err)
		}
		if want := (Counts{Total: seatsOnSale, Available: seatsOnSale}); m.Counts != want {
			t.Errorf("after expiry: %+v, want %+v", m.Counts, want)
		}
		if n := countRows(t, db, `SELECT count(*) FROM outbox WHERE subject = 'boxoffice.inventory.hold.expired'`); n != len(holds) {
			t.Errorf("hold.expired events = %d, want one per hold (%d)", n, len(holds))
		}
		if status, _, err := postHold(client, instances[1].URL, "evt-flash", "acc-late", []string{seat(0), seat(99)}); status != http.StatusCreated {
			t.Errorf("holding returned seats: status %d, %v; want 201", status, err)
		}
	})
}

func TestGANeverOversellsAcrossTwoInstances(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		stores := []*Store{newStore(t, db, clk), newStore(t, secondHandle(t, db), clk)}
		putSeatMap(t, stores[0], "evt-ga", Layout{GA: []GAClass{{Class: "pista", Capacity: 100}}})

		const tries = 500
		var mu sync.Mutex
		granted, refused := 0, 0
		sem := make(chan struct{}, inFlight)
		var wg sync.WaitGroup
		for i := range tries {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				h, err := stores[i%2].PlaceHold(ctx, HoldRequest{EventID: "evt-ga", Account: fmt.Sprintf("acc-%d", i), Class: "pista", Quantity: 1})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && h.Quantity == 1:
					granted++
				case err != nil && strings.HasPrefix(err.Error(), "conflict"):
					refused++
				default:
					t.Errorf("PlaceHold = %+v, %v", h, err)
				}
			})
		}
		wg.Wait()
		if granted != 100 || refused != tries-100 {
			t.Errorf("granted %d, refused %d; want 100 and %d", granted, refused, tries-100)
		}
		m, _ := stores[1].SeatMap(ctx, "evt-ga")
		if want := (Counts{Total: 100, Held: 100}); m.GA[0].Counts != want {
			t.Errorf("GA counts = %+v, want %+v", m.GA[0].Counts, want)
		}
	})
}

// postHold asks instance to hold seats for account over HTTP.
func postHold(c *http.Client, instance, event, account string, seats []string) (int, Hold, error) {
	body, _ := json.Marshal(map[string]any{"seats": seats})
	req, err := http.NewRequest(http.MethodPost, instance+"/v1/events/"+event+"/holds", bytes.NewReader(body))
	if err != nil {
		return 0, Hold{}, err
	}
	req.Header.Set(identity.HeaderUser, account)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, Hold{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, Hold{}, err
	}
	var h Hold
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(b, &h); err != nil {
			return resp.StatusCode, Hold{}, fmt.Errorf("decode hold: %w: %s", err, b)
		}
	} else if resp.StatusCode != http.StatusConflict {
		return resp.StatusCode, Hold{}, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, h, nil
}

func countRows(t *testing.T, db *sqldb.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// secondHandle opens another pool on db's database, as a second instance of the service
// would: the SQLite file db has open, or the PostgreSQL database it is connected to.
func secondHandle(t *testing.T, db *sqldb.DB) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	var opts sqldb.Options
	switch db.Dialect {
	case sqldb.SQLite:
		var seq int
		var name, file string
		if err := db.QueryRowContext(ctx, `PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
			t.Fatalf("sqlite file: %v", err)
		}
		opts = sqldb.Options{Service: strings.TrimSuffix(filepath.Base(file), ".db"), DataDir: filepath.Dir(file)}
	case sqldb.Postgres:
		var name string
		if err := db.QueryRowContext(ctx, `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatalf("postgres database: %v", err)
		}
		u, err := url.Parse(os.Getenv(testkit.PostgresEnv))
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		opts = sqldb.Options{URL: u.String()}
	}
	other, err := sqldb.Open(ctx, opts)
	if err != nil {
		t.Fatalf("open a second handle: %v", err)
	}
	t.Cleanup(func() { _ = other.Close() })
	return other
}
