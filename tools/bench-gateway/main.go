// Command bench-gateway measures what the gateway adds to a request, next to a direct call
// and to nginx as a plain reverse proxy, on one machine over loopback.
//
//	go run ./tools/bench-gateway [-rates 1000,5000] [-duration 5s] [-conns 64] [-targets direct,pools,gateway,gateway-jwt,gateway-graphql,nginx,caddy,fasthttp-jwt,fasthttp,gateway-flood] [-caddy PATH] [-fastproxy PATH] [-markdown] [-target-cpus 1]
//
// Each target is loaded in turn, alone: an open model at fixed arrival rates (latency counted
// from when each request was due, so a stall cannot hide behind a slower load), then a closed
// loop of -conns connections for the most it can serve. The table shows throughput,
// p50/p99/p99.9, each target's p99 over the direct call's at the same load, and the CPU time
// each proxy spends per request (read from /proc: its processes, nginx's workers, and the
// Redis the gateway uses), which a busy machine disturbs far less than latencies.
//
// During a proxy's open-model runs a direct call goes to the upstream for every four of the
// proxy's requests, interleaved with them (-alongside, on by default), and the added p99 is
// measured against those ("+0.4ms (vs 1.2ms)"): both samples cover the same seconds, so a
// hiccup of a shared machine lands in both rather than in whichever target happened to run
// then.
//
// The targets run as child processes of this program started in a role: "upstream" (the
// service), "pools" (the gateway's upstream layer alone), "gateway" (the gateway's Run, with
// a policy file and a redis-server the bench starts; gateway-graphql loads a GraphQL route
// with a small query, the JWT row's work plus reading the operation), nginx from its Debian
// package and, given a binary (-caddy), Caddy: a reverse proxy written in Go on net/http, as
// the gateway is.
// Given a fastproxy binary (-fastproxy; the module tools/bench-gateway/fastproxy), two measuring
// sticks for ADR 0006 run too: fasthttp-jwt, the gateway's own JWT and limiter code on fasthttp
// instead of net/http, with the same Redis, and fasthttp, a plain fasthttp reverse proxy. With
// -target-cpus they are pinned there (taskset), away from the load generator: see
// scripts/bench-gateway.sh -pin.
//
// The last target, gateway-flood, has a table of its own: one client floods a public route
// from 127.0.0.2 for -duration while others, from 127.0.0.3 on, log in and read at 200/s,
// against the gateway's production limiter. It tells whether the flood's 429s cost the
// others anything (a fail-closed login answers 503 when the limiter cannot decide): see
// flood.go.
package main

import "boxoffice.dev/platform/server"

func main() { server.Exec(run) }
