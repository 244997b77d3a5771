package deploycheck

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"boxoffice.dev/gateway/policy"
)

// composePolicy is the policy a gateway service runs: the file POLICY_FILE names, through the
// service's bind mounts, or the gateway's embedded default.
func composePolicy(w *Workspace, s goService) (*policy.Policy, error) {
	file, _ := s.env("POLICY_FILE")
	if file == "" {
		return w.DefaultPolicy()
	}
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == file {
			return readPolicy(v.Source)
		}
	}
	return nil, fmt.Errorf("POLICY_FILE=%s is not a file the service mounts", file)
}

// checkComposeEnv: each deployable's service sets what RequiredEnv asks (and the gateway
// the UPSTREAM_<SERVICE> its policy needs), and sets nothing its code does not read: a
// misspelt variable is otherwise silently ignored.
func checkComposeEnv(w *Workspace, gs []goService) []error {
	var errs []error
	for _, s := range gs {
		required := RequiredEnv(s.d)
		var upstreams map[string]string
		if s.d.Name == "gateway" {
			pol, err := composePolicy(w, s)
			if err != nil {
				errs = append(errs, fmt.Errorf("service %s: %w", s.Name, err))
				continue
			}
			upstreams = UpstreamEnv(pol)
			for name, why := range upstreams {
				if why != "" {
					required[name] = why
				}
			}
		}
		for _, name := range sortedKeys(required) {
			if v, _ := s.env(name); v == "" {
				errs = append(errs, fmt.Errorf("service %s: %s is not set: %s", s.Name, name, required[name]))
			}
		}
		for _, name := range sortedKeys(s.Environment) {
			if !knownEnv(s.d, name, upstreams) {
				errs = append(errs, fmt.Errorf("service %s: sets %s, which %s does not read", s.Name, name, s.d.Name))
			}
		}
	}
	return errs
}

// checkAddresses: every host an environment value names is a service (or network alias) of
// the project. Where the variable names a deployable (AUTH_URL, CATALOG_GRPC_ADDR,
// UPSTREAM_BFF_WEB), its hosts are that deployable's services and the port is the listener
// it names: HTTP for URLs, gRPC for _GRPC_ADDR.
func checkAddresses(w *Workspace, gs []goService, p *types.Project) []error {
	hosts := projectHosts(p)
	var errs []error
	for _, s := range gs {
		for _, name := range sortedKeys(s.Environment) {
			v, _ := s.env(name)
			target, grpc := addressedDeployable(w, name)
			for _, hp := range hostPorts(v) {
				host, port, _ := net.SplitHostPort(hp)
				runs, ok := hosts[host]
				if !ok {
					errs = append(errs, fmt.Errorf("service %s: %s=%s names %s, which is no service of the project", s.Name, name, v, host))
					continue
				}
				if target == "" {
					continue
				}
				for _, svc := range runs {
					i := slices.IndexFunc(gs, func(g goService) bool { return g.Name == svc })
					if i < 0 || gs[i].d.Name != target {
						errs = append(errs, fmt.Errorf("service %s: %s=%s names %s, which does not run %s", s.Name, name, v, host, target))
						break
					}
					want := gs[i].httpPort()
					if grpc {
						want = gs[i].grpcPort()
					}
					if port != want {
						errs = append(errs, fmt.Errorf("service %s: %s=%s: %s listens on %s, not %s", s.Name, name, v, svc, want, port))
						break
					}
				}
			}
		}
	}
	return errs
}

// addressedDeployable returns the deployable a variable's name says it points at, and
// whether at its gRPC listener: UPSTREAM_<NAME> and <NAME>_URL the HTTP one, <NAME>_GRPC_ADDR
// the gRPC one. "" when the name says nothing (REDIS_URL names no deployable).
func addressedDeployable(w *Workspace, name string) (string, bool) {
	var stem string
	grpc := false
	switch {
	case strings.HasPrefix(name, "UPSTREAM_"):
		stem = strings.TrimPrefix(name, "UPSTREAM_")
	case strings.HasSuffix(name, "_GRPC_ADDR"):
		stem, grpc = strings.TrimSuffix(name, "_GRPC_ADDR"), true
	case strings.HasSuffix(name, "_URL"):
		stem = strings.TrimSuffix(name, "_URL")
	default:
		return "", false
	}
	for _, d := range w.Deployables {
		if UpstreamVar(d.Name) == "UPSTREAM_"+stem {
			return d.Name, grpc
		}
	}
	return "", false
}

// projectHosts maps every name a container resolves on the project's networks (service
// names and aliases) to the services behind it.
func projectHosts(p *types.Project) map[string][]string {
	hosts := map[string][]string{}
	for _, name := range serviceNames(p) {
		hosts[name] = append(hosts[name], name)
		for _, n := range p.Services[name].Networks {
			if n == nil {
				continue
			}
			for _, a := range n.Aliases {
				hosts[a] = append(hosts[a], name)
			}
		}
	}
	return hosts
}

// hostPorts returns the host:port pairs in an environment value: a URL, a host:port, or a
// comma-separated list of either. Values of another shape (durations, keys) yield none.
func hostPorts(v string) []string {
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if u, err := url.Parse(part); err == nil && u.Host != "" && u.Port() != "" {
			out = append(out, u.Host)
			continue
		}
		if h, p, err := net.SplitHostPort(part); err == nil && h != "" && p != "" && !strings.Contains(part, "/") {
			out = append(out, part)
		}
	}
	return out
}
