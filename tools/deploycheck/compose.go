package deploycheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// LoadCompose loads and validates compose files (relative to root) through the compose-spec
// loader, the one `docker compose` itself uses, with every profile enabled and an empty
// environment: each ${VAR:-default} takes its default, the configuration a student gets.
// Later files override earlier ones, as with `docker compose -f a.yml -f b.yml`.
func LoadCompose(ctx context.Context, root string, files ...string) (*types.Project, error) {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(root, filepath.FromSlash(f))
	}
	opts, err := cli.NewProjectOptions(paths,
		cli.WithWorkingDirectory(root),
		cli.WithEnv(nil),
		cli.WithProfiles([]string{"*"}),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, fmt.Errorf("compose: %w", err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("compose: %w", err)
	}
	return p, nil
}

// PublishedPorts are the only host ports compose publishes, by service: the edge (the API's
// one entry), the playground and the dashboards (Grafana, and Jaeger's UI for traces). The
// services, Redis, NATS and PostgreSQL are reachable only on the compose network, as inside
// a cluster; a published database is how demo stacks end up on the internet.
var PublishedPorts = map[string][]string{
	"edge":       {"8080"},
	"playground": {"8090"},
	"grafana":    {"3000"},
	"jaeger":     {"16686"},
}

// MemoryBudget is what the default stack's memory limits may add up to: 2 GiB, so BoxOffice
// runs on a small laptop or a free CI runner. (Services under a profile, such as k6, come on
// top and are listed apart.)
const MemoryBudget = 2 << 30

// healthcheckBin is where the Dockerfile puts the container healthcheck (healthcheckMain)
// in every image.
const healthcheckBin = "/usr/local/bin/healthcheck"

// healthcheckMain is the container healthcheck's main package as `go build` takes it.
const healthcheckMain = "./cmd/healthcheck"

// goService is a compose service that runs one of the workspace's deployables.
type goService struct {
	types.ServiceConfig
	d Deployable
}

// env returns the service's value for name and whether it sets one.
func (s goService) env(name string) (string, bool) {
	v, ok := s.Environment[name]
	if !ok || v == nil {
		return "", false
	}
	return *v, true
}

// httpPort is the port the service's HTTP listener uses: HTTP_ADDR's, or the deployable's.
func (s goService) httpPort() string {
	if v, ok := s.env("HTTP_ADDR"); ok {
		if _, p, err := net.SplitHostPort(v); err == nil {
			return p
		}
	}
	return fmt.Sprint(s.d.HTTPPort)
}

// metricsPort is the port where the service serves /metrics: its HTTP port, or for an edge
// deployable, whose HTTP port is public, its admin listener's (ADMIN_ADDR, or its default).
func (s goService) metricsPort() string {
	if !s.d.Edge {
		return s.httpPort()
	}
	addr, ok := s.env("ADMIN_ADDR")
	if !ok {
		if i := slices.IndexFunc(s.d.Env, func(v EnvVar) bool { return v.Name == "ADMIN_ADDR" }); i >= 0 {
			addr = s.d.Env[i].Default
		}
	}
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// grpcPort is the port of the service's gRPC listener, "" when it has none.
func (s goService) grpcPort() string {
	if v, ok := s.env("GRPC_ADDR"); ok {
		_, p, _ := net.SplitHostPort(v)
		return p
	}
	if s.d.GRPCPort == 0 {
		return ""
	}
	return fmt.Sprint(s.d.GRPCPort)
}

// CheckCompose checks a loaded compose project against the workspace: every deployable runs
// in a service built from the Dockerfile with a healthcheck; each image is built by one
// service; services start in dependency order on healthy dependencies, and PostgreSQL is
// healthy only once it answers over TCP; only PublishedPorts are published, on loopback;
// each service sets the variables RequiredEnv asks of it, and none that nothing reads; every
// address in its environment names a service (at the right port when it is a deployable);
// each database is its service's own; the edge and Prometheus reach every replica; images
// are pinned; and memory limits stay within MemoryBudget. It returns every problem found,
// joined.
func CheckCompose(w *Workspace, p *types.Project) error {
	gs, errs := goServices(w, p)
	errs = append(errs, checkDeployablesRun(w, gs)...)
	errs = append(errs, checkBuiltOnce(p)...)
	errs = append(errs, checkHealthchecks(p, gs)...)
	errs = append(errs, checkComposePgIsReady(p)...)
	errs = append(errs, checkDependsOn(p)...)
	errs = append(errs, checkPublished(p)...)
	errs = append(errs, checkComposeEnv(w, gs)...)
	errs = append(errs, checkAddresses(w, gs, p)...)
	errs = append(errs, checkDatabases(gs, p)...)
	errs = append(errs, checkImages(p)...)
	errs = append(errs, checkComposeMemory(gs, p)...)
	errs = append(errs, checkEdge(gs, p)...)
	errs = append(errs, checkPrometheus(gs, p)...)
	return errors.Join(errs...)
}

// goServices returns the services that run an image built from the Dockerfile, each with its
// deployable (the MODULE build argument of the service that builds the image), in name order.
func goServices(w *Workspace, p *types.Project) ([]goService, []error) {
	builders := imageBuilders(p)
	var out []goService
	var errs []error
	for _, name := range serviceNames(p) {
		svc := p.Services[name]
		build := svc.Build
		if b, ok := builders[svc.Image]; ok && build == nil {
			build = p.Services[b[0]].Build
		}
		if build == nil {
			continue
		}
		mod := build.Args["MODULE"]
		if mod == nil || *mod == "" {
			errs = append(errs, fmt.Errorf("service %s: built without a MODULE build argument", name))
			continue
		}
		d, ok := w.DeployableOf(*mod)
		if !ok {
			errs = append(errs, fmt.Errorf("service %s: MODULE=%s is no deployable of go.work (want a directory with cmd/<name>/main.go)", name, *mod))
			continue
		}
		out = append(out, goService{ServiceConfig: svc, d: d})
	}
	return out, errs
}

// checkBuiltOnce: no image is built by two services. Compose builds every service's image at
// once, so two builds of one tag race and the second fails ("image … already exists"); the
// other services that run it name the image alone, with pull_policy: never, or compose would
// first look for it in a registry, where no such image is (or a stranger's is).
func checkBuiltOnce(p *types.Project) []error {
	builders := imageBuilders(p)
	var errs []error
	for _, image := range sortedKeys(builders) {
		if b := builders[image]; len(b) > 1 {
			errs = append(errs, fmt.Errorf("image %s is built by services %s: compose runs the builds at once and all but one fail (\"image … already exists\"); keep build: in %s alone", image, strings.Join(b, ", "), b[0]))
		}
	}
	for _, name := range serviceNames(p) {
		svc := p.Services[name]
		b, ok := builders[svc.Image]
		if svc.Build != nil || !ok {
			continue
		}
		if svc.PullPolicy != types.PullPolicyNever {
			errs = append(errs, fmt.Errorf("service %s: runs %s, which %s builds, with pull_policy %q: want never, or compose first looks for it in a registry", name, svc.Image, b[0], svc.PullPolicy))
		}
	}
	return errs
}

func serviceNames(p *types.Project) []string { return sortedKeys(p.Services) }

// checkDeployablesRun: every deployable runs in at least one service.
func checkDeployablesRun(w *Workspace, gs []goService) []error {
	var errs []error
	for _, d := range w.Deployables {
		if !slices.ContainsFunc(gs, func(s goService) bool { return s.d.Name == d.Name }) {
			errs = append(errs, fmt.Errorf("deployable %s (%s) runs in no compose service", d.Name, d.Main))
		}
	}
	return errs
}

// imageBuilders maps each image a service builds (build: and image:) to those services, in
// name order.
func imageBuilders(p *types.Project) map[string][]string {
	builders := map[string][]string{}
	for _, name := range serviceNames(p) {
		if svc := p.Services[name]; svc.Build != nil && svc.Image != "" {
			builders[svc.Image] = append(builders[svc.Image], name)
		}
	}
	return builders
}

// checkHealthchecks: every long-running service has a healthcheck (a job under a profile,
// such as k6, runs to completion and has none), and a deployable's asks its own /readyz or
// /healthz through the image's healthcheck binary.
func checkHealthchecks(p *types.Project, gs []goService) []error {
	var errs []error
	for _, name := range serviceNames(p) {
		svc := p.Services[name]
		hc := svc.HealthCheck
		if len(svc.Profiles) == 0 && (hc == nil || hc.Disable || len(hc.Test) == 0) {
			errs = append(errs, fmt.Errorf("service %s: no healthcheck", name))
		}
	}
	for _, s := range gs {
		hc := s.HealthCheck
		if hc == nil || hc.Disable || len(hc.Test) == 0 {
			if len(s.Profiles) > 0 {
				errs = append(errs, fmt.Errorf("service %s: no healthcheck", s.Name))
			}
			continue
		}
		want := []string{"CMD", healthcheckBin, "http://127.0.0.1:" + s.httpPort() + "/readyz"}
		alt := []string{"CMD", healthcheckBin, "http://127.0.0.1:" + s.httpPort() + "/healthz"}
		if got := []string(hc.Test); !slices.Equal(got, want) && !slices.Equal(got, alt) {
			errs = append(errs, fmt.Errorf("service %s: healthcheck %q, want %q", s.Name, got, want))
		}
	}
	return errs
}

// checkDependsOn: a service waits for its dependencies to be healthy, not merely started,
// which needs a healthcheck on each of them.
func checkDependsOn(p *types.Project) []error {
	var errs []error
	for _, name := range serviceNames(p) {
		deps := p.Services[name].DependsOn
		for _, dep := range sortedKeys(deps) {
			if c := deps[dep].Condition; c != types.ServiceConditionHealthy {
				errs = append(errs, fmt.Errorf("service %s: depends on %s with condition %q, want %s", name, dep, c, types.ServiceConditionHealthy))
			}
			if hc := p.Services[dep].HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
				errs = append(errs, fmt.Errorf("service %s: depends on %s being healthy, which has no healthcheck", name, dep))
			}
		}
	}
	return errs
}

// checkPublished: only PublishedPorts are published, and on the loopback interface.
func checkPublished(p *types.Project) []error {
	var errs []error
	for _, name := range serviceNames(p) {
		for _, port := range p.Services[name].Ports {
			if port.Published == "" {
				errs = append(errs, fmt.Errorf("service %s: port %d is published on a random host port; publish nothing or add it to PublishedPorts", name, port.Target))
				continue
			}
			if !slices.Contains(PublishedPorts[name], port.Published) {
				errs = append(errs, fmt.Errorf("service %s: publishes port %s, which only the edge, the playground and the dashboards may (see PublishedPorts)", name, port.Published))
				continue
			}
			if ip := net.ParseIP(port.HostIP); ip == nil || !ip.IsLoopback() {
				errs = append(errs, fmt.Errorf("service %s: port %s is published on %q, want 127.0.0.1 by default (${BOXOFFICE_BIND:-127.0.0.1})", name, port.Published, port.HostIP))
			}
		}
	}
	return errs
}

// checkDatabases: every DATABASE_URL names its deployable's own database, and the postgres
// service creates exactly those (BOXOFFICE_DATABASES, read by deploy/compose/postgres-init.sh).
func checkDatabases(gs []goService, p *types.Project) []error {
	var errs []error
	want := map[string]bool{}
	for _, s := range gs {
		v, ok := s.env("DATABASE_URL")
		if !ok {
			continue
		}
		u, err := url.Parse(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("service %s: DATABASE_URL: %w", s.Name, err))
			continue
		}
		if db := strings.TrimPrefix(u.Path, "/"); db != s.d.Name {
			errs = append(errs, fmt.Errorf("service %s: DATABASE_URL names database %q, want %q: one database per service", s.Name, db, s.d.Name))
		}
		want[s.d.Name] = true
	}
	pg, ok := p.Services["postgres"]
	if !ok {
		if len(want) > 0 {
			errs = append(errs, errors.New("services use DATABASE_URL but there is no postgres service"))
		}
		return errs
	}
	created := map[string]bool{}
	if v := pg.Environment["BOXOFFICE_DATABASES"]; v != nil {
		for _, db := range strings.Fields(*v) {
			created[db] = true
		}
	}
	for _, db := range sortedKeys(want) {
		if !created[db] {
			errs = append(errs, fmt.Errorf("service postgres: BOXOFFICE_DATABASES does not create database %s", db))
		}
	}
	for _, db := range sortedKeys(created) {
		if !want[db] {
			errs = append(errs, fmt.Errorf("service postgres: BOXOFFICE_DATABASES creates database %s, which no service uses", db))
		}
	}
	return errs
}

// checkImages: every image not built here is pinned to a version, so `docker compose up`
// runs next year what it runs today.
func checkImages(p *types.Project) []error {
	builders := imageBuilders(p)
	var errs []error
	for _, name := range serviceNames(p) {
		svc := p.Services[name]
		if _, built := builders[svc.Image]; svc.Build != nil || built {
			continue
		}
		repo, tag, found := strings.Cut(svc.Image[strings.LastIndex(svc.Image, "/")+1:], ":")
		if !found || tag == "" || tag == "latest" || repo == "" {
			errs = append(errs, fmt.Errorf("service %s: image %q is not pinned to a version", name, svc.Image))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
