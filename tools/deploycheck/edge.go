package deploycheck

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// Where the edge and Prometheus read their configuration inside their containers.
const (
	nginxConfPath      = "/etc/nginx/nginx.conf"
	prometheusConfPath = "/etc/prometheus/prometheus.yml"
)

// checkEdge: the edge (nginx) spreads requests over every gateway replica at its HTTP port,
// limits per client address and passes that address on; its own address is fixed, outside
// the range Docker hands out, and every gateway trusts X-Forwarded-For from it.
func checkEdge(gs []goService, p *types.Project) []error {
	edge, ok := p.Services["edge"]
	if !ok {
		return []error{errors.New("no edge service: the gateways need nginx in front of them")}
	}
	var errs []error
	conf, err := mountedFile(edge, nginxConfPath)
	if err != nil {
		return []error{fmt.Errorf("service edge: %w", err)}
	}
	servers := nginxUpstreamServers(conf)
	var gateways []string
	for _, s := range gs {
		if s.d.Name == "gateway" {
			gateways = append(gateways, s.Name+":"+s.httpPort())
		}
	}
	for _, g := range gateways {
		if !slices.Contains(servers, g) {
			errs = append(errs, fmt.Errorf("service edge: nginx.conf does not send requests to gateway replica %s", g))
		}
	}
	for _, srv := range servers {
		if !slices.Contains(gateways, srv) {
			errs = append(errs, fmt.Errorf("service edge: nginx.conf sends requests to %s, which is no gateway replica", srv))
		}
	}
	for _, directive := range []string{"limit_req_zone $binary_remote_addr", "limit_req zone=", "proxy_set_header X-Forwarded-For $remote_addr"} {
		if !strings.Contains(conf, directive) {
			errs = append(errs, fmt.Errorf("service edge: nginx.conf has no %q", directive))
		}
	}

	addr, err := fixedAddress(edge, p)
	if err != nil {
		return append(errs, fmt.Errorf("service edge: %w", err))
	}
	for _, s := range gs {
		if s.d.Name == "gateway" && !trusts(s, addr) {
			v, _ := s.env("TRUSTED_PROXIES")
			errs = append(errs, fmt.Errorf("service %s: TRUSTED_PROXIES=%q does not include the edge's address %s: every client would look like the edge", s.Name, v, addr))
		}
	}
	return append(errs, checkDirectClients(gs, p)...)
}

// checkDirectClients: a service that sends requests to a gateway replica itself (its
// GATEWAY_URL names one: the playground, whose simulated fans each send their own
// X-Forwarded-For) has a fixed address, and that replica trusts it.
func checkDirectClients(gs []goService, p *types.Project) []error {
	var errs []error
	for _, c := range gs {
		v, ok := c.env("GATEWAY_URL")
		if !ok {
			continue
		}
		for _, hp := range hostPorts(v) {
			host, _, _ := strings.Cut(hp, ":")
			i := slices.IndexFunc(gs, func(g goService) bool { return g.Name == host && g.d.Name == "gateway" })
			if i < 0 {
				continue // through the edge, or not a gateway: checkAddresses has its say
			}
			addr, err := fixedAddress(c.ServiceConfig, p)
			if err != nil {
				errs = append(errs, fmt.Errorf("service %s: sends to %s directly but %w", c.Name, host, err))
				continue
			}
			if !trusts(gs[i], addr) {
				tp, _ := gs[i].env("TRUSTED_PROXIES")
				errs = append(errs, fmt.Errorf("service %s: TRUSTED_PROXIES=%q does not include the address of %s (%s), which sends to it directly: its clients would all share one IP", host, tp, c.Name, addr))
			}
		}
	}
	return errs
}

// trusts reports whether a gateway service's TRUSTED_PROXIES includes addr.
func trusts(gateway goService, addr netip.Addr) bool {
	v, _ := gateway.env("TRUSTED_PROXIES")
	for t := range strings.SplitSeq(v, ",") {
		t = strings.TrimSpace(t)
		if pfx, err := netip.ParsePrefix(t); err == nil && pfx.Contains(addr) {
			return true
		}
		if a, err := netip.ParseAddr(t); err == nil && a == addr {
			return true
		}
	}
	return false
}

// fixedAddress returns a service's fixed IPv4 address, checking that Docker cannot give it
// to another container first (it lies outside its network's ip_range).
func fixedAddress(svc types.ServiceConfig, p *types.Project) (netip.Addr, error) {
	for netName, n := range svc.Networks {
		if n == nil || n.Ipv4Address == "" {
			continue
		}
		addr, err := netip.ParseAddr(n.Ipv4Address)
		if err != nil {
			return addr, fmt.Errorf("ipv4_address: %w", err)
		}
		for _, pool := range p.Networks[netName].Ipam.Config {
			if pool == nil || pool.IPRange == "" {
				continue
			}
			if r, err := netip.ParsePrefix(pool.IPRange); err == nil && r.Contains(addr) {
				return addr, fmt.Errorf("ipv4_address %s is inside ip_range %s: Docker may give it to another container first", addr, r)
			}
		}
		return addr, nil
	}
	return netip.Addr{}, errors.New("has no fixed ipv4_address for the gateways to trust")
}

// nginxServer matches a `server host:port ...;` line; nginxUpstream an upstream block.
var (
	nginxUpstream = regexp.MustCompile(`(?s)upstream\s+\S+\s*\{(.*?)\}`)
	nginxServer   = regexp.MustCompile(`(?m)^\s*server\s+([^\s;]+)`)
)

// nginxUpstreamServers returns the host:port of every server of every upstream block.
func nginxUpstreamServers(conf string) []string {
	var out []string
	for _, block := range nginxUpstream.FindAllStringSubmatch(conf, -1) {
		for _, m := range nginxServer.FindAllStringSubmatch(block[1], -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// prometheusConfig is the part of prometheus.yml the checks read.
type prometheusConfig struct {
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

// checkPrometheus: Prometheus scrapes every container of every deployable, where it serves
// /metrics (its HTTP port; an edge deployable's admin port), under a job named after the
// deployable, and nothing that is not a service.
func checkPrometheus(gs []goService, p *types.Project) []error {
	prom, ok := p.Services["prometheus"]
	if !ok {
		return []error{errors.New("no prometheus service")}
	}
	data, err := mountedFile(prom, prometheusConfPath)
	if err != nil {
		return []error{fmt.Errorf("service prometheus: %w", err)}
	}
	var cfg prometheusConfig
	if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
		return []error{fmt.Errorf("service prometheus: prometheus.yml: %w", err)}
	}
	jobOf := map[string]string{} // target → job
	for _, sc := range cfg.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			continue
		}
		for _, st := range sc.StaticConfigs {
			for _, t := range st.Targets {
				jobOf[t] = sc.JobName
			}
		}
	}
	var errs []error
	hosts := projectHosts(p)
	for _, s := range gs {
		target := s.Name + ":" + s.metricsPort()
		switch job, ok := jobOf[target]; {
		case !ok:
			errs = append(errs, fmt.Errorf("service prometheus: does not scrape %s (/metrics of %s)", target, s.d.Name))
		case job != s.d.Name:
			errs = append(errs, fmt.Errorf("service prometheus: scrapes %s as job %q, want %q", target, job, s.d.Name))
		}
	}
	for _, t := range sortedKeys(jobOf) {
		if host, _, _ := strings.Cut(t, ":"); hosts[host] == nil {
			errs = append(errs, fmt.Errorf("service prometheus: scrapes %s, which is no service of the project", t))
		}
	}
	return errs
}

// mountedFile reads the host file a service bind-mounts at target.
func mountedFile(svc types.ServiceConfig, target string) (string, error) {
	for _, v := range svc.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			data, err := os.ReadFile(v.Source)
			if err != nil {
				return "", err
			}
			return string(data), nil
		}
	}
	return "", fmt.Errorf("mounts nothing at %s", target)
}
