package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/template"
	"time"
)

//go:embed nginx.conf.tmpl caddy.json.tmpl policy-plain.yaml.tmpl policy-jwt.yaml.tmpl policy-graphql.yaml.tmpl policy-flood.yaml.tmpl
var templates embed.FS

// target is one way of serving GET /v1/bench, or, for gateway-graphql, a GraphQL query.
type target struct {
	name  string
	label string
	start func(ctx context.Context, b *bench) (*running, error)
}

// running is a started target: the URL to load, the headers each request carries, the
// processes whose CPU time is the proxy's (none for the direct call), and how to stop it.
type running struct {
	url    string
	header http.Header
	// body is POSTed to url in every request; nil: each request is a GET.
	body []byte
	pids []int
	stop func()
	// redisPID is the Redis among pids, whose share of the CPU time is shown apart; 0 if none.
	redisPID int
	// metrics is the gateway's /metrics, on its admin listener, where its rule decisions are
	// counted by path (Redis, or the local fallback); "" for the other targets.
	metrics string
}

var targets = []target{
	{"direct", "direct to the upstream", startDirect},
	{"pools", "gateway/upstream layer only", startPools},
	{"gateway", "gateway, no policies", startGateway("gateway", "policy-plain.yaml.tmpl", false, benchLimiter)},
	{"gateway-jwt", "gateway, JWT + 2 Redis rules", startGateway("gateway-jwt", "policy-jwt.yaml.tmpl", true, benchLimiter)},
	{"gateway-graphql", "gateway, GraphQL query + JWT + 2 Redis rules", startGraphQL},
	{"nginx", "nginx, plain reverse proxy", startNginx},
	{"caddy", "Caddy, plain reverse proxy", startCaddy},
	{"fasthttp-jwt", "fasthttp, JWT + 2 Redis rules (measuring stick)", startFastproxy("fasthttp-jwt", true)},
	{"fasthttp", "fasthttp, plain reverse proxy", startFastproxy("fasthttp", false)},
	// Measured by measureFlood, not by rates and a max: see flood.go.
	{floodTarget, "gateway, flood + logins (production limiter)", startGateway(floodTarget, "policy-flood.yaml.tmpl", true, nil)},
}

var (
	targetNames   []string
	targetsByName = map[string]target{}
)

func init() {
	for _, t := range targets {
		targetNames = append(targetNames, t.name)
		targetsByName[t.name] = t
	}
}

func startDirect(_ context.Context, b *bench) (*running, error) {
	return &running{url: b.upstream + benchPath, header: http.Header{}, stop: func() {}}, nil
}

func startPools(ctx context.Context, b *bench) (*running, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := b.startProc("pools", b.self, []string{"pools", "-addr", addr, "-upstream", b.upstream}, b.childEnv("pools"))
	return serving(ctx, p, err, addr, http.Header{}, 10*time.Second)
}

// benchLimiter is the limiter's setting for the targets measured at rates and at the max.
// Production bounds a Redis decision at 5ms and decides locally past it. A gateway at full
// load queues every step of a request for the CPU, 64 connections at ~8k/s being ~8ms each,
// so at the max nearly every decision would be the local fallback's: the bench would measure
// the fallback, not Redis. The report counts decisions by path, so that this stays checked.
var benchLimiter = []string{"RATELIMIT_TIMEOUT=1s"}

// startGateway runs the gateway (its Run, in a process of its own) as target name, with the
// policy file rendered from policy; withToken sends a user token on every request; limiter
// is added to its environment (nil: the production settings). The Redis it uses counts as
// part of it: its CPU time is the gateway's.
func startGateway(name, policy string, withToken bool, limiter []string) func(context.Context, *bench) (*running, error) {
	return func(ctx context.Context, b *bench) (*running, error) {
		redisURL, err := b.redisServer(ctx)
		if err != nil {
			return nil, err
		}
		dir, policyFile, err := b.policyFile("gateway", policy)
		if err != nil {
			return nil, err
		}
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		admin, err := freeAddr()
		if err != nil {
			return nil, err
		}
		env := b.childEnv(name,
			"HTTP_ADDR="+addr,
			"ADMIN_ADDR="+admin,
			"ADMIN_TOKEN=bench-admin-token",
			"POLICY_FILE="+policyFile,
			"AUTH_URL="+b.upstream,
			"REDIS_URL="+redisURL,
			"DATA_DIR="+dir,
			"LOG_LEVEL=warn", // no access log line per request, as nginx's is off
		)
		env = append(env, limiter...)
		env = append(env, b.gatewayEnv...) // last, so that they win
		header := http.Header{}
		if withToken {
			header.Set("Authorization", "Bearer "+b.token)
		}
		p, err := b.startProc("gateway", b.self, []string{"gateway"}, env)
		r, err := serving(ctx, p, err, addr, header, 20*time.Second)
		if err != nil {
			return nil, err
		}
		r.pids = append(r.pids, b.redisPID)
		r.redisPID = b.redisPID
		r.metrics = "http://" + admin + "/metrics" // the admin listener's: the public one does not serve it
		return r, nil
	}
}

// startGraphQL runs the gateway as the gateway-jwt target does, with a GraphQL route added
// to its policy (policy-graphql.yaml.tmpl), and loads that route with graphqlBody: the same
// JWT and rules, plus reading the operation. Next to the gateway-jwt row, its CPU per
// request and added p99 tell what reading a GraphQL operation costs.
func startGraphQL(ctx context.Context, b *bench) (*running, error) {
	r, err := startGateway("gateway-graphql", "policy-graphql.yaml.tmpl", true, benchLimiter)(ctx, b)
	if err != nil {
		return nil, err
	}
	r.url = strings.TrimSuffix(r.url, benchPath) + graphqlPath
	r.header.Set("Content-Type", "application/json")
	r.body = graphqlBody
	return r, nil
}

// request builds the requests r is loaded with: GETs of its URL, or POSTs of its body.
func (r *running) request() func(ctx context.Context) *http.Request {
	if r.body == nil {
		return getRequest(r.url, r.header)
	}
	return postRequest(r.url, r.header, r.body)
}

// policyFile renders the policy template tmpl for the bench's upstream into a new scratch
// directory named after name, and returns the directory and the file.
func (b *bench) policyFile(name, tmpl string) (dir, file string, err error) {
	if dir, err = os.MkdirTemp(b.dir, name+"-"); err != nil {
		return "", "", err
	}
	file = filepath.Join(dir, "policy.yaml")
	return dir, file, render(tmpl, file, map[string]any{"Upstream": b.upstream})
}

func startNginx(ctx context.Context, b *bench) (*running, error) {
	// As many workers as the gateway's GOMAXPROCS.
	proxy, err := b.proxyConfig("nginx", "nginx.conf", map[string]any{"Workers": b.targetCPUs()})
	if err != nil {
		return nil, err
	}
	p, err := b.startProc("nginx", b.nginx, []string{"-p", proxy.dir, "-c", proxy.conf, "-e", "stderr"}, b.env)
	return serving(ctx, p, err, proxy.addr, http.Header{}, 10*time.Second)
}

// startCaddy runs Caddy as a plain reverse proxy: a gateway written in Go on net/http, as
// this one is, with nothing but the proxying. It tells what share of nginx's rate Go's HTTP
// stack leaves a Go proxy on this machine before any policy runs. Caddy runs as it ships
// (its own GOGC and GOMAXPROCS, no access log, no metrics) and keeps up to 256 idle
// upstream connections, as nginx does here. Not a Debian package: the bench needs a caddy
// binary (-caddy), e.g. from go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9.
func startCaddy(ctx context.Context, b *bench) (*running, error) {
	if b.caddy == "" {
		return nil, errors.New("no caddy binary: install one (go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9) and pass -caddy PATH")
	}
	proxy, err := b.proxyConfig("caddy", "caddy.json", nil)
	if err != nil {
		return nil, err
	}
	env := append(b.childEnv("caddy"), "XDG_DATA_HOME="+proxy.dir, "XDG_CONFIG_HOME="+proxy.dir)
	p, err := b.startProc("caddy", b.caddy, []string{"run", "--config", proxy.conf}, env)
	return serving(ctx, p, err, proxy.addr, http.Header{}, 10*time.Second)
}

// fastproxyMetrics is where fastproxy serves its counters (its MetricsPath), the limiter's
// decisions by path among them, as the gateway's /metrics has them.
const fastproxyMetrics = "/_fastproxy/metrics"

// startFastproxy runs fastproxy (tools/bench-gateway/fastproxy, a binary given by
// -fastproxy) as target name. withPolicy: the policy work of the gateway-jwt target, done
// with the gateway's own code on fasthttp, against the bench's Redis, whose CPU time counts
// as the target's, as for the gateway; a user token on every request. Without: a plain
// reverse proxy. It is a measuring stick, not a gateway (see its package doc): it tells how much of
// the gap to nginx is Go's net/http stack, the evidence behind ADR 0006.
func startFastproxy(name string, withPolicy bool) func(context.Context, *bench) (*running, error) {
	return func(ctx context.Context, b *bench) (*running, error) {
		if b.fastproxy == "" {
			return nil, errors.New("no fastproxy binary: build one (go build ./tools/bench-gateway/fastproxy) and pass -fastproxy PATH")
		}
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args := []string{"-addr", addr, "-upstream", b.upstream}
		header := http.Header{}
		if withPolicy {
			redisURL, err := b.redisServer(ctx)
			if err != nil {
				return nil, err
			}
			_, policyFile, err := b.policyFile(name, "policy-jwt.yaml.tmpl")
			if err != nil {
				return nil, err
			}
			args = append(args, "-policy", policyFile, "-redis", redisURL, "-jwks", b.upstream+"/.well-known/jwks.json",
				"-limiter-timeout", "1s") // as the gateway's RATELIMIT_TIMEOUT: see startGateway
			header.Set("Authorization", "Bearer "+b.token)
		} else {
			args = append(args, "-plain")
		}
		p, err := b.startProc(name, b.fastproxy, args, b.env)
		r, err := serving(ctx, p, err, addr, header, 20*time.Second)
		if err != nil {
			return nil, err
		}
		r.metrics = "http://" + addr + fastproxyMetrics
		if withPolicy {
			r.pids = append(r.pids, b.redisPID)
			r.redisPID = b.redisPID
		}
		return r, nil
	}
}

// proxyFiles is where a third-party proxy target runs: its scratch directory, its listen
// address and its configuration file.
type proxyFiles struct{ dir, addr, conf string }

// proxyConfig renders the template file+".tmpl" into a scratch directory of the proxy name,
// with the directory (Prefix), a free listen address (Listen), the upstream's host:port
// (Upstream) and data.
func (b *bench) proxyConfig(name, file string, data map[string]any) (proxyFiles, error) {
	dir, err := os.MkdirTemp(b.dir, name+"-")
	if err != nil {
		return proxyFiles{}, err
	}
	addr, err := freeAddr()
	if err != nil {
		return proxyFiles{}, err
	}
	all := map[string]any{"Prefix": dir, "Listen": addr, "Upstream": strings.TrimPrefix(b.upstream, "http://")}
	maps.Copy(all, data)
	conf := filepath.Join(dir, file)
	if err := render(file+".tmpl", conf, all); err != nil {
		return proxyFiles{}, err
	}
	return proxyFiles{dir: dir, addr: addr, conf: conf}, nil
}

// serving waits until p, just started (or not, when err is set), answers GET /v1/bench on
// addr with header, and returns what a target's start returns.
func serving(ctx context.Context, p *proc, err error, addr string, header http.Header, within time.Duration) (*running, error) {
	if err != nil {
		return nil, err
	}
	url := "http://" + addr + benchPath
	if err := p.waitReady(ctx, url, header, within); err != nil {
		p.stop()
		return nil, err
	}
	return &running{url: url, header: header, pids: []int{p.cmd.Process.Pid}, stop: p.stop}, nil
}

// render executes the embedded template name with data into the file path.
func render(name, path string, data any) error {
	t, err := template.ParseFS(templates, name)
	if err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

func numCPU() int { return runtime.GOMAXPROCS(0) }

// targetCPUs is how many CPUs the targets run on: as many as their Go runtime finds.
func (b *bench) targetCPUs() int {
	if n, err := cpuCount(b.cpus); err == nil && b.cpus != "" {
		return n
	}
	return numCPU()
}
