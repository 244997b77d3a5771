// Package playground is BoxOffice's learning playground: a web UI and JSON API that launch
// scenarios against the running system, stream their live series and turn their knobs, and
// the algorithm lab that replays a request trace through every rate-limiting algorithm.
package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/playground/scenario"
	"boxoffice.dev/scenarios"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "playground", HTTPAddr: ":8090", GRPCAddr: ""}

// Config is the playground's own configuration, beside the platform's (config.Process): where
// the system it drives listens.
type Config struct {
	// EndpointsFile is ENDPOINTS_FILE, the endpoints.json `boxoffice up` writes; default
	// DATA_DIR/endpoints.json. It is read when a run starts (the system may be ready after the
	// playground is), and when it exists it is the whole target.
	EndpointsFile string
	// Target is the system as the environment describes it, used when EndpointsFile does not
	// exist (a compose stack): GATEWAY_URL, ADMIN_URL (or ADMIN_ADDR), ADMIN_TOKEN, NATS_URL,
	// REDIS_URL (the limiter's store, which the store-outage scenario can stall) and
	// UPSTREAM_<SERVICE>, each service's instances.
	Target scenario.Target
}

// services are the components whose instances a scenario may reach directly (control hooks,
// a flash sale's set-up): every one behind the gateway.
var services = []string{"auth", "catalog", "search", "inventory", "waitroom", "order", "payment", "notification", "assistant", "bff-mobile", "bff-web"}

// loadConfig reads the playground's variables; dataDir is the process's DATA_DIR.
func loadConfig(r *config.Reader, dataDir string) Config {
	t := scenario.Target{
		Gateway:    strings.TrimSuffix(r.URL("GATEWAY_URL", "", "http", "https"), "/"),
		Admin:      strings.TrimSuffix(r.URL("ADMIN_URL", "", "http", "https"), "/"),
		AdminToken: r.String("ADMIN_TOKEN", ""),
		NATS:       r.String("NATS_URL", ""),
		Redis:      r.String("REDIS_URL", ""),
		Services:   map[string][]string{},
	}
	if addr := r.String("ADMIN_ADDR", ""); t.Admin == "" && addr != "" {
		t.Admin = "http://" + addr
	}
	for _, name := range services {
		if urls := r.List("UPSTREAM_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_")), nil); len(urls) > 0 {
			t.Services[name] = urls
		}
	}
	return Config{EndpointsFile: r.String("ENDPOINTS_FILE", filepath.Join(dataDir, "endpoints.json")), Target: t}
}

// target finds the system to drive: the endpoints file when it exists, else the environment.
func (c Config) target() (scenario.Target, error) {
	t, err := scenario.TargetFromEndpoints(c.EndpointsFile)
	switch {
	case err == nil:
		return t, nil
	case !errors.Is(err, fs.ErrNotExist):
		return scenario.Target{}, err
	case c.Target.Gateway == "":
		return scenario.Target{}, fmt.Errorf("no system to drive: %s does not exist and GATEWAY_URL is not set (start the system with `boxoffice up`)", c.EndpointsFile)
	}
	return c.Target, nil
}

// Run starts the process and serves until ctx is done. Its own variables, beside the
// platform's: see Config.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		r := config.New(getenv)
		cfg := loadConfig(r, s.Config.DataDir)
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("configuration: %w", err)
		}
		list, err := scenario.LoadDir(scenarios.FS)
		if err != nil {
			return nil, fmt.Errorf("load scenarios: %w", err)
		}
		return serve(ctx, s, list, cfg.target, scenario.Options{})
	})
}

// serve wires the playground on s: the runs of list's scenarios against the system target
// finds, with o for every run, and the routes that start and follow them. As the process
// stops, a worker waits for the active run to put the system back (see runs.close), within
// SHUTDOWN_TIMEOUT: the run ends with ctx, at the start of the shutdown. A process that dies
// instead (killed, out of memory) leaves the run's changes in the put-back journal in
// DATA_DIR, which the next start puts back before any run (see newRuns).
func serve(ctx context.Context, s *server.Server, list []scenario.Scenario, target func() (scenario.Target, error), o scenario.Options) (http.Handler, error) {
	j, err := openJournal(s.Config.DataDir, s.Log)
	if err != nil {
		return nil, err
	}
	o.Journal = j
	rs := newRuns(ctx, list, target, o, s.Log)
	s.Go("runs", func(stop context.Context) error {
		<-stop.Done()
		wait, cancel := context.WithTimeout(context.WithoutCancel(stop), s.Config.ShutdownTimeout)
		defer cancel()
		return rs.close(wait)
	})
	return handler(ctx, rs, s.Log), nil
}
