package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/playground/scenario"
)

// Endpoints is what `boxoffice up` writes to <data-dir>/endpoints.json: where everything
// listens, for people, scripts and the playground. Fields appear as the components that fill
// them exist.
type Endpoints struct {
	Gateway    string              `json:"gateway"`
	Playground string              `json:"playground"`
	Admin      Admin               `json:"admin"`
	Services   map[string][]string `json:"services"`
	BFFs       map[string][]string `json:"bffs"`
	NATS       string              `json:"nats"`
	Redis      Redis               `json:"redis"`
	Users      []User              `json:"users"`
	Partners   []Partner           `json:"partners"`
}

// Admin is the gateway's admin API: its own loopback listener and bearer token.
type Admin struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// User is a demo fan to log in as. Every demo fan (fan0001…fan2000@boxoffice.test) shares the
// password.
type User struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// Partner is a demo tenant and its API key (X-Api-Key).
type Partner struct {
	Tenant string `json:"tenant"`
	// TenantID is the tenant's id, which the gateway's tenant overrides
	// (/admin/tenant-limits/{tenant}/…) and its limit keys name.
	TenantID string `json:"tenant_id"`
	Plan     string `json:"plan"`
	APIKey   string `json:"api_key"`
}

// Redis says which store the all-in-one mode resolved and why (env, redis-server, emulator).
type Redis struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// runUp starts every component in this process: an embedded NATS server, one Redis, then each
// component instance on its fixed port with the shared settings in its environment, once it
// has checked that every one of those ports is free (checkPorts). It returns when ctx is done
// and every component has drained: the playground first, so that a run it stops puts the
// system back while the system still serves, then the rest.
func runUp(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	setUsage(fs, upUsage())
	dataDir := fs.String("data-dir", ".boxoffice", "where SQLite files, the NATS store, logs and endpoints.json live")
	offset := fs.Int("port-offset", 0, fmt.Sprintf("added to every fixed port, to run another copy beside this one: a multiple of %d", offsetStep))
	readyWithin := fs.Duration("ready-timeout", 10*time.Second, "how long every component has to answer /healthz")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := checkPorts(*offset); err != nil {
		return fmt.Errorf("up: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(*dataDir, "logs"), 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	log := logging.New(stdout, slog.LevelInfo, "boxoffice-up")

	ns, err := natsconn.StartEmbedded(natsconn.EmbeddedOptions{StoreDir: filepath.Join(*dataDir, "nats"), Host: "127.0.0.1", Port: natsPort + *offset})
	if err != nil {
		return fmt.Errorf("start embedded nats: %w", err)
	}
	defer ns.Shutdown()

	rd, err := redisconn.Resolve(ctx, redisconn.Options{URL: getenv("REDIS_URL"), DataDir: filepath.Join(*dataDir, "redis"), Log: log})
	if err != nil {
		return fmt.Errorf("resolve redis: %w", err)
	}
	defer rd.Close()
	// The playground's store-outage scenario stalls, kills and restarts the limiter's store
	// through the process that started it, over NATS, so that a headless run in another
	// process reaches it too. A store REDIS_URL names is not this process's to kill.
	if rd.Server != nil {
		nc, err := natsconn.Connect(ctx, ns.ClientURL(), "boxoffice-up", log)
		if err != nil {
			return fmt.Errorf("connect nats: %w", err)
		}
		defer nc.Close()
		stopFaults, err := scenario.ServeStoreFaults(nc, rd.Server, "boxoffice up", log)
		if err != nil {
			return err
		}
		defer stopFaults()
	}

	sec, err := loadSecrets(*dataDir)
	if err != nil {
		return err
	}
	demoSecret := getenv("DEMO_SECRET")
	if demoSecret == "" {
		demoSecret = "boxoffice-demo"
	}
	shared := map[string]string{
		"NATS_URL":         ns.ClientURL(),
		"REDIS_URL":        rd.URL,
		"DATA_DIR":         *dataDir,
		"SHUTDOWN_TIMEOUT": "3s",
		"SEED_DEMO":        "true",
		"DEMO_SECRET":      demoSecret,
	}
	for k, v := range wiring(*offset) {
		shared[k] = v
	}
	for k, v := range sec.env() {
		shared[k] = v
	}
	ep := Endpoints{
		Services: map[string][]string{}, BFFs: map[string][]string{}, NATS: ns.ClientURL(),
		Redis: Redis{URL: rd.URL, Source: rd.Source},
		Admin: Admin{URL: "http://" + shared["ADMIN_ADDR"], Token: sec.adminToken},
	}
	ep.Users, ep.Partners = demoCredentials(demoSecret)

	// The stop is ordered: the front components (the playground) get runCtx and stop as soon
	// as up does, or a component fails; the others get backCtx, which ends only once every
	// front component has returned. A run the playground stops puts the gateway's limits
	// back through the admin API, which must still be listening.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, runCtx := errgroup.WithContext(runCtx)
	backCtx, stopBack := context.WithCancel(context.WithoutCancel(runCtx))
	defer stopBack()
	var front sync.WaitGroup
	var urls []string
	for _, c := range components {
		for i, p := range c.instances {
			env := map[string]string{"HTTP_ADDR": addr(p.http + *offset), "GRPC_ADDR": ""}
			if p.grpc != 0 {
				env["GRPC_ADDR"] = addr(p.grpc + *offset)
			}
			cctx := backCtx
			if c.front {
				cctx = runCtx
				env["DRAIN_DELAY"] = "0s"
				front.Add(1)
			}
			name := c.name
			if len(c.instances) > 1 {
				name += "-" + strconv.Itoa(i+1)
			}
			logf, err := openLog(filepath.Join(*dataDir, "logs"), name)
			if err != nil {
				return err
			}
			defer logf.Close()
			getenv := overlay(getenv, shared, env)
			g.Go(func() error {
				if c.front {
					defer front.Done()
				}
				if err := c.run(cctx, []string{name}, getenv, logf, logf); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				return nil
			})
			url := "http://" + env["HTTP_ADDR"]
			urls = append(urls, url)
			ep.add(c.name, url)
		}
	}
	go func() {
		<-runCtx.Done()
		front.Wait()
		stopBack()
	}()

	ready := make(chan error, 1)
	go func() { ready <- waitHealthy(runCtx, urls, *readyWithin) }()
	select {
	case err := <-ready:
		if err != nil {
			cancel()
			return errors.Join(err, g.Wait())
		}
	case <-runCtx.Done():
		return g.Wait()
	}

	if err := waitForSeatMaps(runCtx, ep.Services["inventory"], *readyWithin); err != nil {
		cancel()
		return errors.Join(err, g.Wait())
	}
	log.Info("demo data ready")

	// The gateway routes only to instances its readiness probes have seen ready; until every
	// service has one, a first request would get a 503 from a system that says it is up.
	if err := waitRoutable(runCtx, ep.Admin, *readyWithin); err != nil {
		cancel()
		return errors.Join(err, g.Wait())
	}

	path := filepath.Join(*dataDir, "endpoints.json")
	if err := writeJSON(path, ep); err != nil {
		cancel()
		return errors.Join(err, g.Wait())
	}
	printWelcome(stdout, ep, rd.Source, path)

	err = g.Wait()
	log.Info("all components stopped", "error", err)
	return err
}

// upUsage is `up -h`'s text before the flags. TestUpUsageStatesThePortPlan holds its
// numbers to the plan.
func upUsage() string {
	var safe []string
	for _, off := range safeOffsets() {
		safe = append(safe, strconv.Itoa(off))
	}
	first, _ := ephemeralPorts()
	return fmt.Sprintf(`usage: boxoffice up [--data-dir DIR] [--port-offset N] [--ready-timeout D]

Runs every BoxOffice component in this process on fixed loopback ports until Ctrl-C:
gateway 8080, playground 8090, the gateway's admin API 9080, services 81xx and 82xx
(HTTP) and 91xx and 92xx (gRPC), NATS 4222. It writes where everything listens, with the
demo credentials, to DIR/endpoints.json. Each component logs to DIR/logs/NAME.log; the
logs of the runs before stay beside it, NAME.log.1 (the last) to NAME.log.%d.

Another copy beside it needs ports of its own: --port-offset adds N to every port. One
copy's ports span 4222 to 9206, so copies whose offsets differ by a multiple of %d never
share one. Beside a copy at 0, use one of: %s. A smaller offset
lands on the other copy's ports (with 1000, auth's HTTP port 8101 is the other's auth
gRPC port 9101); a larger one reaches the ports the kernel hands out to outgoing
connections (from %d). up checks every port before it starts anything.
`, keptLogs, offsetStep, strings.Join(safe, ", "), first)
}

func (ep *Endpoints) add(component, url string) {
	switch component {
	case "gateway":
		ep.Gateway = url
	case "playground":
		ep.Playground = url
	case "bff-mobile", "bff-web":
		ep.BFFs[component] = append(ep.BFFs[component], url)
	default:
		ep.Services[component] = append(ep.Services[component], url)
	}
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// overlay returns a getenv that answers from the maps first (later maps win), then from base.
func overlay(base func(string) string, maps ...map[string]string) func(string) string {
	return func(k string) string {
		for i := len(maps) - 1; i >= 0; i-- {
			if v, ok := maps[i][k]; ok {
				return v
			}
		}
		return base(k)
	}
}

// waitHealthy polls every URL's /healthz until all answer 200 or within passes.
func waitHealthy(ctx context.Context, urls []string, within time.Duration) error {
	probes := make([]string, len(urls))
	for i, u := range urls {
		probes[i] = u + "/healthz"
	}
	return waitOK(ctx, probes, within)
}

// waitOK polls every URL with GET until each has answered 200, or within passes.
func waitOK(ctx context.Context, urls []string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for _, u := range urls {
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s did not answer 200 within %v", u, within)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// waitRoutable polls the gateway's GET /admin/upstreams until every service has a routable
// instance, or within passes.
func waitRoutable(ctx context.Context, admin Admin, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var waitingFor string
	for {
		waitingFor = unroutable(ctx, client, admin)
		if waitingFor == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gateway has no ready instance of %s within %v", waitingFor, within)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// unroutable names a service the gateway cannot route to yet ("" when it can route to all).
func unroutable(ctx context.Context, client *http.Client, admin Admin) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin.URL+"/admin/upstreams", nil)
	req.Header.Set("Authorization", "Bearer "+admin.Token)
	resp, err := client.Do(req)
	if err != nil {
		return "any service (admin API: " + err.Error() + ")"
	}
	defer resp.Body.Close()
	var body struct {
		Services []struct {
			Name      string `json:"name"`
			Instances []struct {
				Routable bool `json:"routable"`
			} `json:"instances"`
		} `json:"services"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil || len(body.Services) == 0 {
		return "any service (admin API: " + resp.Status + ")"
	}
	for _, sv := range body.Services {
		routable := false
		for _, in := range sv.Instances {
			routable = routable || in.Routable
		}
		if !routable {
			return sv.Name
		}
	}
	return ""
}

// writeJSON writes v to path readable by its owner alone: the endpoints hold the admin token
// and the demo partners' API keys. A file left by an earlier run is narrowed too (WriteFile
// keeps an existing file's mode).
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func printWelcome(w io.Writer, ep Endpoints, redisSource, path string) {
	fmt.Fprintf(w, `
BoxOffice is up.

  gateway      %s      the public entry
  playground   %s      scenarios and the algorithm lab
  admin API    %s      Authorization: Bearer %s

  log in as    %s / %s   (fan0001 … fan2000@boxoffice.test share the password)
`, ep.Gateway, ep.Playground, ep.Admin.URL, ep.Admin.Token, ep.Users[0].Email, ep.Users[0].Password)
	for _, p := range ep.Partners {
		fmt.Fprintf(w, "  partner      %-10s (%s, id %s)  X-Api-Key: %s\n", p.Tenant, p.Plan, p.TenantID, p.APIKey)
	}
	fmt.Fprintf(w, `
  every URL and credential: %s
  logs: one file per component in %s
  redis: %s (%s)   nats: %s

Press Ctrl-C to stop.
`, path, filepath.Join(filepath.Dir(path), "logs"), ep.Redis.URL, redisSource, ep.NATS)
}
