package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The flood target is the gateway on the limiter's bad day: one client floods a public
// route as fast as it can while other clients, from other addresses, log in and read at a
// fixed modest rate. It asks one question: does the flood, refused with 429s, cost the
// others anything? A login whose rule fails closed answers 503 whenever the limiter cannot
// decide on Redis in time, so a flood that starves the limiter shows as the others' 503s.
//
// The gateway keys its per-IP rules on the peer's address (no TRUSTED_PROXIES), so each
// client dials from an address of its own: all of 127.0.0.0/8 is loopback on Linux. Loopback
// is exempt from the gateway's in-memory pre-limit (settings.local_ip_limit), so the whole
// flood meets the Redis rules, as a flood below the pre-limit or from many addresses would.
// The gateway runs the production limiter (5ms per Redis round trip, 50ms on the fail-closed
// lane), not the 1s the other targets get: a bound a loaded machine misses is what the bad
// day is made of.
const (
	floodTarget = "gateway-flood"
	floodAddr   = "127.0.0.2"
	floodConns  = 16 // keep-alive connections, each in a tight loop
	// floodLead is how long the flood runs alone before the others start, so that they meet
	// it at full rate.
	floodLead   = 500 * time.Millisecond
	othersFirst = 3  // the others dial from 127.0.0.3 …
	othersAddrs = 20 // … to 127.0.0.22
	// othersEach is how many logins a second each other address sends, and as many reads:
	// 200 requests a second in all, within login-per-ip (10/s) of policy-flood.yaml.tmpl.
	othersEach = 5
)

// floodResult is one run of the flood target.
type floodResult struct {
	target string
	flood  result // the flooding client's closed loop; 429s are its failures
	logins result // the others' logins, every address together; a 401 is a right answer
	reads  result // the others' JWT reads, every address together
	// others is how the others' load was made, e.g. "200/s from 20 addresses".
	others string
	// paths counts the gateway's rule decisions in the run by path: store, local_deny …
	paths map[string]float64
}

// floodRate is the rate at which the flood was answered, whatever the answer.
func (f floodResult) floodRate() float64 {
	if f.flood.elapsed <= 0 {
		return 0
	}
	return float64(f.flood.sent) / f.flood.elapsed.Seconds()
}

// refusedShare is the share of the flood answered 429.
func (f floodResult) refusedShare() float64 {
	if f.flood.sent == 0 {
		return 0
	}
	return float64(f.flood.failures["429"]) / float64(f.flood.sent)
}

// othersServed counts the others' requests answered as the upstream answers them: a login
// 200 or 401 (a wrong password is a right answer), a read 200.
func (f floodResult) othersServed() int {
	return f.logins.ok + f.logins.failures["401"] + f.reads.ok
}

func (f floodResult) othersSent() int { return f.logins.sent + f.reads.sent }

// othersRefused counts the others' answers that were 503: the limiter could not decide.
func (f floodResult) othersRefused() int {
	return f.logins.failures["503"] + f.reads.failures["503"]
}

// measureFlood starts t, checks that its three routes answer, then floods it from floodAddr
// for floodLead + cfg.duration while the others load it for cfg.duration.
func (b *bench) measureFlood(ctx context.Context, cfg config, t target) (floodResult, error) {
	tr, err := t.start(ctx, b)
	if err != nil {
		return floodResult{}, err
	}
	defer tr.stop()
	base := strings.TrimSuffix(tr.url, benchPath)
	flooder := newLoaderFrom(floodAddr, getRequest(base+eventsPath, http.Header{}))
	defer flooder.client.CloseIdleConnections()
	var accounts atomic.Int64 // one account per login, so that no login meets its per-account limit
	var others []*loader      // a login loader and a read loader per address, in turn
	for i := range othersAddrs {
		login := newLoaderFrom(fmt.Sprintf("127.0.0.%d", othersFirst+i), loginRequest(base+loginPath, &accounts))
		defer login.client.CloseIdleConnections()
		read := *login // the same client, so the same address
		read.newRequest = getRequest(tr.url, tr.header)
		others = append(others, login, &read)
	}
	// The first login of account 1 is the right password: every route must answer 200.
	for _, c := range []struct {
		what string
		l    *loader
	}{{"GET " + eventsPath, flooder}, {"POST " + loginPath, others[0]}, {"GET " + benchPath, others[1]}} {
		if err := c.l.send(ctx); err != nil {
			return floodResult{}, fmt.Errorf("%s: %w", c.what, err)
		}
	}

	before := decisionPaths(ctx, tr.metrics)
	var flood result
	var wg sync.WaitGroup
	wg.Go(func() { flood = flooder.closed(ctx, floodConns, floodLead+cfg.duration) })
	flooder.sleep(floodLead)
	weights := make([]int, len(others))
	for i := range weights {
		weights[i] = 1
	}
	rs := openTogether(ctx, othersEach, cfg.duration, others, weights)
	wg.Wait()
	out := floodResult{target: t.label, flood: flood, others: fmt.Sprintf("%d/s from %d addresses", 2*othersEach*othersAddrs, othersAddrs)}
	var logins, reads []result
	for i, r := range rs {
		if i%2 == 0 {
			logins = append(logins, r)
		} else {
			reads = append(reads, r)
		}
	}
	out.logins, out.reads = mergeResults(logins), mergeResults(reads)
	// Both readings or none: a total since the start would pass for the run's.
	if after := decisionPaths(ctx, tr.metrics); before != nil && after != nil {
		out.paths = after
		for p, n := range before {
			out.paths[p] -= n
		}
	}
	return out, ctx.Err()
}

// newLoaderFrom is newLoader with its connections dialled from the local address ip, so that
// a gateway keying on the peer's address counts it as a client of its own.
func newLoaderFrom(ip string, newRequest func(ctx context.Context) *http.Request) *loader {
	l := newLoader(newRequest)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	l.client.Transport.(*http.Transport).DialContext = d.DialContext
	return l
}

// loginRequest builds logins to url, each for the next account of accounts: the odd ones
// with the right password, the even ones with a wrong one.
func loginRequest(url string, accounts *atomic.Int64) func(ctx context.Context) *http.Request {
	return func(ctx context.Context) *http.Request {
		n := accounts.Add(1)
		password := benchPassword
		if n%2 == 0 {
			password = "wrong"
		}
		body := fmt.Sprintf(`{"email":"fan-%d@example.org","password":%q}`, n, password)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
}

// mergeResults is the results of runs over the same seconds as one: their requests, answers
// and failures summed (the first failure of each kind kept from the earliest result that
// had one), their latencies together, the longest elapsed time, the first one's load.
func mergeResults(rs []result) result {
	var out result
	for i, r := range rs {
		if i == 0 {
			out.target, out.load = r.target, r.load
		}
		out.sent += r.sent
		out.ok += r.ok
		out.elapsed = max(out.elapsed, r.elapsed)
		out.latency = append(out.latency, r.latency...)
		for k, n := range r.failures {
			if out.failures == nil {
				out.failures, out.firstErr = map[string]int{}, map[string]string{}
			}
			if _, seen := out.firstErr[k]; !seen {
				out.firstErr[k] = r.firstErr[k]
			}
			out.failures[k] += n
		}
	}
	slices.Sort(out.latency)
	return out
}

// mainPaths are the decision paths the flood row always shows, in this order: Redis, the
// local denial of a key Redis denied, and the two ways of deciding without Redis.
var mainPaths = []string{"store", "local_deny", "fallback", "fail_closed"}

// pathCounts writes decisions by path as "store 120 · local_deny 5000 · fallback 0 ·
// fail_closed 0", then any other path that decided something, by name; "—" when there are
// none (the gateway's metrics could not be read).
func pathCounts(paths map[string]float64) string {
	if paths == nil {
		return "—"
	}
	var parts []string
	for _, p := range mainPaths {
		parts = append(parts, fmt.Sprintf("%s %.0f", p, paths[p]))
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if !slices.Contains(mainPaths, p) && paths[p] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", p, paths[p]))
		}
	}
	return strings.Join(parts, " · ")
}
