package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"boxoffice.dev/gateway"
	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/services/auth/token"
)

// benchKid names the bench's signing key in its JWKS and tokens.
const benchKid = "bench-1"

// The claims the gateway checks on a user token: the auth service's issuer and audience.
const (
	tokenIssuer   = "boxoffice-auth"
	tokenAudience = "boxoffice"
)

// config is what the flags of a benchmark run say.
type config struct {
	rates    []int
	duration time.Duration
	warmup   time.Duration
	conns    int
	targets  []string
	markdown bool
	nginx    string
	caddy    string // caddy binary; "" = the caddy target is not measured
	// fastproxy is the fastproxy binary (tools/bench-gateway/fastproxy); "" = the fasthttp
	// targets are not measured.
	fastproxy string
	profile   string // directory for CPU profiles; "" = none
	cpus      string // taskset CPU list for everything but the load; "" = no pinning
	// gatewayEnv is added to the gateway targets' environment, for experiments (GOGC=400).
	gatewayEnv []string
	// alongside sends, during each open-model run of a proxy, direct calls to the upstream,
	// one for every alongsideEvery of the proxy's requests, interleaved with them; its added
	// p99 is then measured against them, over the same seconds.
	alongside bool
}

// alongsideEvery is how many of a proxy's requests go out for each direct call sent
// alongside them: few enough not to add much load (a quarter), enough for a p99 (1,250 calls
// in 5s at 1000/s).
const alongsideEvery = 4

// run is the bench's entry point. With a role as first argument ("upstream", "pools",
// "gateway") it is one of the processes a benchmark starts; otherwise it runs a benchmark.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 {
		switch args[1] {
		case "upstream":
			return serveUpstream(ctx, args[2:])
		case "pools":
			return profiled(getenv, func() error { return servePools(ctx, args[2:]) })
		case "gateway":
			gateway.TuneGC(getenv) // as cmd/gateway does
			return profiled(getenv, func() error { return gateway.Run(ctx, args[1:], getenv, stdout, stderr) })
		}
	}
	cfg, err := parseFlags(args[1:], stderr)
	if err != nil {
		return err
	}
	return benchmark(ctx, cfg, getenv, stdout)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rates := fs.String("rates", "1000,5000", "fixed arrival rates (requests/s), comma-separated")
	duration := fs.Duration("duration", 5*time.Second, "length of each measured run")
	warmup := fs.Duration("warmup", time.Second, "unmeasured run at the first rate before measuring a target")
	conns := fs.Int("conns", 64, "concurrent connections of the max-throughput run")
	targets := fs.String("targets", "", "targets to measure, in order, some of "+strings.Join(targetNames, ",")+"; empty means all (caddy only with -caddy, fasthttp-jwt and fasthttp only with -fastproxy)")
	markdown := fs.Bool("markdown", false, "print the table as Markdown (for docs/benchmarks.md)")
	profile := fs.String("profile", "", "write CPU and allocation profiles of each proxy target into this directory")
	nginx := fs.String("nginx", "nginx", "nginx binary")
	caddy := fs.String("caddy", "", "caddy binary, for the caddy target (a Go reverse proxy); empty leaves that target out of the default list")
	fastproxy := fs.String("fastproxy", "", "fastproxy binary (go build ./tools/bench-gateway/fastproxy), for the fasthttp-jwt and fasthttp targets; empty leaves them out of the default list")
	alongside := fs.Bool("alongside", true, fmt.Sprintf("during a proxy's open-model runs, send one direct call every %d requests, interleaved, and measure its added p99 against those", alongsideEvery))
	var gatewayEnv []string
	fs.Func("gateway-env", "`NAME=value` added to the gateway targets' environment (repeatable), e.g. GOGC=100 or RATELIMIT_TIMEOUT=5ms", func(v string) error {
		if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
			return fmt.Errorf("want NAME=value, got %q", v)
		}
		gatewayEnv = append(gatewayEnv, v)
		return nil
	})
	cpus := fs.String("target-cpus", "", "pin the upstream, the targets and Redis to these CPUs (a taskset list such as 1 or 2-3); "+
		"run the bench itself on the others (scripts/bench-gateway.sh -pin does both)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg := config{duration: *duration, warmup: *warmup, conns: *conns, markdown: *markdown, nginx: *nginx, caddy: *caddy, fastproxy: *fastproxy, profile: *profile, cpus: *cpus, alongside: *alongside, gatewayEnv: gatewayEnv}
	if cfg.cpus != "" {
		if _, err := cpuCount(cfg.cpus); err != nil {
			return config{}, fmt.Errorf("-target-cpus: %w", err)
		}
	}
	for _, s := range strings.Split(*rates, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || r <= 0 {
			return config{}, fmt.Errorf("-rates: %q is not a positive number", s)
		}
		cfg.rates = append(cfg.rates, r)
	}
	if *targets == "" {
		*targets = defaultTargets(cfg.caddy != "", cfg.fastproxy != "")
	}
	for _, s := range strings.Split(*targets, ",") {
		s = strings.TrimSpace(s)
		if _, ok := targetsByName[s]; !ok {
			return config{}, fmt.Errorf("-targets: unknown %q, want some of %s", s, strings.Join(targetNames, ","))
		}
		cfg.targets = append(cfg.targets, s)
	}
	switch {
	case cfg.duration <= 0 || cfg.warmup < 0:
		return config{}, fmt.Errorf("-duration and -warmup: want positive durations")
	case cfg.conns <= 0:
		return config{}, fmt.Errorf("-conns: want at least 1")
	}
	return cfg, nil
}

// defaultTargets lists every target in order, the caddy target only if there is a caddy
// binary (it is not a Debian package as nginx is), the fasthttp ones only if there is a
// fastproxy binary (a module of its own, built apart).
func defaultTargets(withCaddy, withFastproxy bool) string {
	names := slices.DeleteFunc(slices.Clone(targetNames), func(n string) bool {
		return n == "caddy" && !withCaddy || (n == "fasthttp-jwt" || n == "fasthttp") && !withFastproxy
	})
	return strings.Join(names, ",")
}

// bench is what the targets share during one benchmark.
type bench struct {
	self     string // this program, started again in a role
	dir      string // scratch space, removed at the end
	env      []string
	upstream string              // base URL of the upstream
	token    string              // a valid user token
	redis    *redisconn.Resolved // started on first use
	redisPID int
	nginx    string
	caddy    string
	// fastproxy is the fastproxy binary (config.fastproxy).
	fastproxy string
	profile   string // directory for CPU profiles; "" = none
	cpus      string // taskset CPU list of the processes started; "" = not pinned
	// gatewayEnv is added to the gateway targets' environment (config.gatewayEnv).
	gatewayEnv []string
}

// childEnv is the environment of a target's process: the bench's, a CPU profile when
// asked for, and extra.
func (b *bench) childEnv(target string, extra ...string) []string {
	env := append(slices.Clone(b.env), extra...)
	if b.profile != "" {
		env = append(env, profileVar+"="+filepath.Join(b.profile, target+".cpu.pprof"))
	}
	return env
}

// profileVar names the file a role writes its CPU profile to.
const profileVar = "BENCH_CPU_PROFILE"

// profiled runs serve, recording a CPU profile into the file named by BENCH_CPU_PROFILE
// when it is set, and, beside it (.allocs.pprof for .cpu.pprof), what was allocated where.
func profiled(getenv func(string) string, serve func() error) (err error) {
	path := getenv(profileVar)
	if path == "" {
		return serve()
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer pprof.StopCPUProfile()
	defer func() {
		a, e := os.Create(strings.TrimSuffix(path, ".cpu.pprof") + ".allocs.pprof")
		if e == nil {
			e = errors.Join(pprof.Lookup("allocs").WriteTo(a, 0), a.Close())
		}
		if e != nil && err == nil {
			err = fmt.Errorf("allocs profile: %w", e)
		}
	}()
	return serve()
}

// benchmark starts the upstream, measures each target in turn (one at a time, so that they
// never compete for the CPU) and prints the table.
func benchmark(ctx context.Context, cfg config, getenv func(string) string, stdout io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the bench binary: %w", err)
	}
	dir, err := os.MkdirTemp("", "bench-gateway-")
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	defer os.RemoveAll(dir)
	b := &bench{self: self, dir: dir, nginx: cfg.nginx, caddy: cfg.caddy, fastproxy: cfg.fastproxy, profile: cfg.profile, cpus: cfg.cpus, gatewayEnv: cfg.gatewayEnv, env: []string{"PATH=" + getenv("PATH"), "HOME=" + dir}}
	if b.profile != "" {
		if b.profile, err = filepath.Abs(b.profile); err == nil {
			err = os.MkdirAll(b.profile, 0o755)
		}
		if err != nil {
			return fmt.Errorf("-profile: %w", err)
		}
	}
	defer b.close()

	seed := make([]byte, 32)
	rand.Read(seed)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	up, err := b.startProc("upstream", self, []string{"upstream", "-addr", addr, "-jwk-seed", hex.EncodeToString(seed)}, b.env)
	if err != nil {
		return err
	}
	defer up.stop()
	b.upstream = "http://" + addr
	if err := up.waitReady(ctx, b.upstream+"/readyz", nil, 10*time.Second); err != nil {
		return err
	}
	if b.token, err = userToken(hex.EncodeToString(seed), time.Now()); err != nil {
		return err
	}

	where := fmt.Sprintf("%d CPUs shared by all", numCPU())
	if b.cpus != "" {
		n, _ := cpuCount(b.cpus)
		where = fmt.Sprintf("load generator on %d CPU(s), upstream, targets and Redis pinned to CPUs %s (%d)", numCPU(), b.cpus, n)
	}
	fmt.Fprintf(stdout, "bench-gateway: %s; open-model rates %v for %v each, max with %d connections; upstream answers %d bytes\n\n",
		where, cfg.rates, cfg.duration, cfg.conns, len(benchBody))
	var results []result
	var floods []floodResult
	var skipped []string
	for _, name := range cfg.targets {
		t := targetsByName[name]
		if name == floodTarget {
			f, err := b.measureFlood(ctx, cfg, t)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v", t.label, err))
				continue
			}
			floods = append(floods, f)
			continue
		}
		rs, err := b.measure(ctx, cfg, t)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", t.label, err))
			continue
		}
		results = append(results, rs...)
	}
	if len(results) > 0 || len(floods) == 0 {
		printTable(stdout, results, cfg.markdown)
	}
	printFloodTable(stdout, floods, cfg.markdown)
	for _, s := range skipped {
		fmt.Fprintf(stdout, "not measured: %s\n", s)
	}
	return ctx.Err()
}

// userToken is a user token the gateway accepts for an hour from now, signed with the key
// of the given hex seed, whose JWKS the upstream publishes.
func userToken(seedHex string, now time.Time) (string, error) {
	key, err := keyFromSeed(seedHex)
	if err != nil {
		return "", err
	}
	return token.Sign(key, benchKid, token.Claims{
		Subject: "bench-user", Issuer: tokenIssuer, Audience: tokenAudience, ID: "bench",
		IssuedAt: now, NotBefore: now, ExpiresAt: now.Add(time.Hour),
	})
}

// measure starts t, checks that it answers, warms it up and runs each load against it.
func (b *bench) measure(ctx context.Context, cfg config, t target) ([]result, error) {
	tr, err := t.start(ctx, b)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	l := newLoader(tr.request())
	defer l.client.CloseIdleConnections()
	if err := l.send(ctx); err != nil {
		return nil, fmt.Errorf("%s %s: %w", l.newRequest(ctx).Method, tr.url, err)
	}
	if cfg.warmup > 0 {
		l.open(ctx, cfg.rates[0], cfg.warmup)
	}
	// Direct calls sent alongside a proxy's open-model runs, when asked: see config.alongside.
	// Each is the proxy's request (its path, body and headers) made to the upstream, without
	// the token the proxy consumes.
	var direct *loader
	if cfg.alongside && tr.pids != nil {
		u, err := url.Parse(tr.url)
		if err != nil {
			return nil, fmt.Errorf("target url: %w", err)
		}
		d := running{url: b.upstream + u.Path, header: tr.header.Clone(), body: tr.body}
		d.header.Del("Authorization")
		direct = newLoader(d.request())
		defer direct.client.CloseIdleConnections()
	}
	var out []result
	runs := make([]func() result, 0, len(cfg.rates)+1)
	for _, rate := range cfg.rates {
		runs = append(runs, func() result {
			if direct == nil {
				return l.open(ctx, rate, cfg.duration)
			}
			rs := openTogether(ctx, rate, cfg.duration, []*loader{l, direct}, []int{alongsideEvery, 1})
			rs[0].alongside = &rs[1]
			return rs[0]
		})
	}
	runs = append(runs, func() result { return l.closed(ctx, cfg.conns, cfg.duration) })
	for i, run := range runs {
		// A run past the target's capacity can leave it shedding or with instances marked
		// not ready for a while; the next run starts once it answers again.
		if err := l.settle(ctx, 30*time.Second); err != nil {
			return out, fmt.Errorf("after run %d: %w", i, err)
		}
		redisPIDs := []int{tr.redisPID}
		before, beforeRedis, paths := cpuTime(tr.pids), cpuTime(redisPIDs), decisionPaths(ctx, tr.metrics)
		r := run()
		r.target = t.label
		if len(tr.pids) > 0 {
			r.cpu = cpuTime(tr.pids) - before
		}
		if tr.redisPID != 0 {
			r.cpuRedis = cpuTime(redisPIDs) - beforeRedis
		}
		if tr.metrics != "" {
			r.paths = decisionPaths(ctx, tr.metrics)
			for p, n := range paths {
				r.paths[p] -= n
			}
		}
		out = append(out, r)
	}
	return out, ctx.Err()
}

// decisionPaths reads the gateway's rule decisions so far by path (store, fallback, …) from
// its Prometheus metrics at url: the counter ratelimit_decisions_total. Nil when url is ""
// or cannot be read.
func decisionPaths(ctx context.Context, url string) map[string]float64 {
	if url == "" {
		return nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return nil
	}
	return countPaths(string(body))
}

// countPaths sums the samples of ratelimit_decisions_total in a Prometheus text exposition
// by their path label.
func countPaths(exposition string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.Lines(exposition) {
		labels, ok := strings.CutPrefix(line, "ratelimit_decisions_total{")
		if !ok {
			continue
		}
		_, path, ok := strings.Cut(labels, `path="`)
		if !ok {
			continue
		}
		path, _, _ = strings.Cut(path, `"`)
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			out[path] += v
		}
	}
	return out
}

// redisServer starts a redis-server for the gateways on first use.
func (b *bench) redisServer(ctx context.Context) (string, error) {
	if b.redis != nil {
		return b.redis.URL, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server is needed for the gateway targets: %w", err)
	}
	r, err := redisconn.Resolve(ctx, redisconn.Options{RedisServerPath: bin, DataDir: filepath.Join(b.dir, "redis")})
	if err != nil {
		return "", err
	}
	b.redis = r
	if b.redisPID, err = redisPID(ctx, r.Client); err != nil {
		return "", err
	}
	if err := b.pinRedis(ctx); err != nil {
		return "", err
	}
	return r.URL, nil
}

func (b *bench) close() {
	if b.redis != nil {
		b.redis.Close()
	}
}
