package upstream

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

func TestUpdateRejectsInvalidConfig(t *testing.T) {
	ok := ServiceConfig{Name: "catalog", Instances: []string{"http://127.0.0.1:8102"}}
	for _, c := range []struct {
		name string
		svc  []ServiceConfig
		want string
	}{
		{"no name", []ServiceConfig{{Instances: ok.Instances}}, `services[0] "": name: required`},
		{"no instances", []ServiceConfig{{Name: "catalog"}}, `services[0] "catalog": instances: set instances or dns`},
		{"both", []ServiceConfig{{Name: "catalog", Instances: ok.Instances, DNS: "catalog:8102"}}, `dns: set instances or dns, not both`},
		{"bad scheme", []ServiceConfig{{Name: "catalog", Instances: []string{"http://a:1", "ftp://b:2"}}}, `instances[1]: "ftp://b:2": scheme must be http or https`},
		{"no port", []ServiceConfig{{Name: "catalog", Instances: []string{"http://catalog"}}}, `instances[0]: "http://catalog": want scheme://host:port`},
		{"a path", []ServiceConfig{{Name: "catalog", Instances: []string{"http://catalog:1/v1"}}}, `want scheme://host:port and nothing more`},
		{"dns without port", []ServiceConfig{{Name: "catalog", DNS: "catalog"}}, `dns: "catalog": want scheme://host:port`},
		{"negative limit", []ServiceConfig{{Name: "catalog", Instances: ok.Instances, MaxInFlight: -1}}, `maxInFlight: must not be negative`},
		{"probe path", []ServiceConfig{{Name: "catalog", Instances: ok.Instances, Probe: ProbeConfig{Path: "readyz"}}}, `probe.path: "readyz" must start with /`},
		{"panic threshold above 1", []ServiceConfig{{Name: "catalog", Instances: ok.Instances, PanicThreshold: 1.5}}, `panicThreshold: 1.5: want at most 1`},
		{"twice", []ServiceConfig{ok, ok}, `services[1] "catalog": name: used twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New([]ServiceConfig{ok}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = p.Update(c.svc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Update() = %v, want an error containing %q", err, c.want)
			}
			if s := p.Snapshot(); len(s) != 1 || s[0].Name != "catalog" || s[0].Instances[0].URL != "http://127.0.0.1:8102" {
				t.Errorf("Snapshot() after a rejected Update = %+v, want the running catalog kept", s)
			}
		})
	}
}

// TestUpdate changes a running gateway's services: instances, knobs, a new service, a
// removed one. Instances that stay keep their state; requests see the change at once.
func TestUpdate(t *testing.T) {
	a, b := newBackend(t, nil), newBackend(t, nil)
	g := startGateway(t, []ServiceConfig{
		{Name: "svc", Instances: []string{a.url}, Probe: fastProbe},
		{Name: "old", Instances: []string{a.url}, Probe: fastProbe},
	}, Options{}, RouteOptions{}, true)
	testkit.Eventually(t, 5*time.Second, "a probed ready", func() bool { return g.status(t, a.url).Ready })

	err := g.pools.Update([]ServiceConfig{
		{Name: "svc", Instances: []string{a.url, b.url}, MaxInFlight: 7, Probe: fastProbe},
		{Name: "new", Instances: []string{b.url}, Probe: fastProbe},
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if s := g.status(t, a.url); !s.Ready {
		t.Errorf("a after Update = %+v, want still ready (no new probe needed)", s)
	}
	testkit.Eventually(t, 5*time.Second, "b probed ready", func() bool { return g.status(t, b.url).Ready })
	snap := g.pools.Snapshot()
	var names []string
	for _, s := range snap {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "new,svc" {
		t.Errorf("services after Update = %s, want new,svc", got)
	}
	if snap[1].MaxInFlight != 7 {
		t.Errorf("svc MaxInFlight = %d, want 7", snap[1].MaxInFlight)
	}
	seen := map[string]bool{}
	for range 40 {
		seen[g.do(t, "GET", "/x", nil, true).upstream] = true
	}
	if !seen[a.url] || !seen[b.url] {
		t.Errorf("upstreams seen = %v, want both a and b", seen)
	}

	// Take a out: no request reaches it afterwards.
	if err := g.pools.Update([]ServiceConfig{{Name: "svc", Instances: []string{b.url}, Probe: fastProbe}}); err != nil {
		t.Fatal(err)
	}
	before := a.hits.Load()
	for range 20 {
		if res := g.do(t, "GET", "/x", nil, true); res.upstream != b.url {
			t.Fatalf("upstream = %q, want %s", res.upstream, b.url)
		}
	}
	if n := a.hits.Load() - before; n != 0 {
		t.Errorf("requests to a removed instance = %d, want 0", n)
	}
}

// resolver is a DNS whose answers the test sets.
type resolver struct {
	mu      sync.Mutex
	answers map[string][]string
	err     error
}

var _ Resolver = (*resolver)(nil)

func (r *resolver) set(host string, ips ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[host] = ips
}

func (r *resolver) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func (r *resolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	var out []net.IPAddr
	for _, ip := range r.answers[host] {
		out = append(out, net.IPAddr{IP: net.ParseIP(ip)})
	}
	return out, nil
}

// TestDNS runs two instances on one port, at 127.0.0.1 and 127.0.0.2, as two replicas
// behind one name; the name's answer changes and the pool follows.
func TestDNS(t *testing.T) {
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l1.Addr().(*net.TCPAddr).Port
	l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
	if err != nil {
		t.Skipf("a second loopback address: %v", err)
	}
	a, b := serveBackend(t, l1, nil), serveBackend(t, l2, nil)
	dns := &resolver{answers: map[string][]string{}}
	dns.set("catalog.test", "127.0.0.1")
	g := startGateway(t, []ServiceConfig{{Name: "svc", DNS: fmt.Sprintf("catalog.test:%d", port), DNSInterval: 20 * time.Millisecond, Probe: fastProbe}},
		Options{Resolver: dns}, RouteOptions{}, true)

	urls := func() string {
		var out []string
		for _, in := range g.pools.Snapshot()[0].Instances {
			if in.Ready {
				out = append(out, in.URL)
			}
		}
		return strings.Join(out, " ")
	}
	testkit.Eventually(t, 5*time.Second, "a resolved and ready", func() bool { return urls() == a.url })

	dns.set("catalog.test", "127.0.0.2", "127.0.0.1")
	testkit.Eventually(t, 5*time.Second, "a and b resolved and ready", func() bool { return urls() == a.url+" "+b.url })

	// A failing DNS keeps the last instances.
	dns.fail(&net.DNSError{Err: "server misbehaving", Name: "catalog.test", IsTemporary: true})
	deadline := time.Now().Add(100 * time.Millisecond) // five re-resolutions
	for time.Now().Before(deadline) {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK {
			t.Fatalf("while DNS fails: status %d, want 200 from the last known instances", res.status)
		}
	}
	if got := urls(); got != a.url+" "+b.url {
		t.Errorf("instances while DNS fails = %q, want both kept", got)
	}

	dns.fail(nil)
	dns.set("catalog.test", "127.0.0.2")
	testkit.Eventually(t, 5*time.Second, "only b left", func() bool { return urls() == b.url })
	before := a.hits.Load()
	for range 20 {
		if res := g.do(t, "GET", "/x", nil, true); res.upstream != b.url {
			t.Fatalf("upstream = %q, want %s", res.upstream, b.url)
		}
	}
	if n := a.hits.Load() - before; n != 0 {
		t.Errorf("requests to an instance gone from DNS = %d, want 0", n)
	}
}

// TestDNSSystemResolver resolves localhost through the system's resolver.
func TestDNSSystemResolver(t *testing.T) {
	b := newBackend(t, nil)
	port := b.srv.Listener.Addr().(*net.TCPAddr).Port
	g := startGateway(t, []ServiceConfig{{Name: "svc", DNS: fmt.Sprintf("localhost:%d", port), Probe: fastProbe}}, Options{}, RouteOptions{}, true)
	testkit.Eventually(t, 5*time.Second, "localhost resolved and ready", func() bool {
		for _, in := range g.pools.Snapshot()[0].Instances {
			if in.Ready && in.URL == b.url {
				return true
			}
		}
		return false
	})
	if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK || res.upstream != b.url {
		t.Errorf("request: %d from %q, want 200 from %s", res.status, res.upstream, b.url)
	}
}
