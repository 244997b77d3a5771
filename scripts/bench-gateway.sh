#!/bin/sh
# Measures the gateway next to a direct call, nginx and the measuring sticks on this machine,
# then under a flood from one address while other clients log in (see tools/bench-gateway).
# Needs nginx (Debian: apt-get install nginx-light) and redis-server. Extra arguments go to
# the bench, e.g. scripts/bench-gateway.sh -rates 1000,5000,10000 -duration 10s -markdown
# With -pin first (needs taskset and 2 CPUs or more), the load generator runs on CPU 0 and
# everything it measures on the other CPUs, so that the two do not take each other's time.
# Run it on a quiet machine: anything else using the CPU shows up in the p99s.
set -eu
cd "$(dirname "$0")/.."
for bin in nginx redis-server; do
  if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$bin" ]; then
    echo "bench-gateway: $bin is not installed" >&2
    exit 1
  fi
done
PATH="$PATH:/usr/sbin"
bin="$(mktemp -d)/bench-gateway"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./tools/bench-gateway
# fastproxy, the gateway's policy code on fasthttp (a module of its own, so that the gateway
# does not depend on fasthttp), is measured too: the fasthttp-jwt and fasthttp targets.
fastproxy="$(dirname "$bin")/fastproxy"
go build -o "$fastproxy" ./tools/bench-gateway/fastproxy
pin=""
if [ "${1:-}" = "-pin" ]; then
  pin=1
  shift
fi
set -- -fastproxy "$fastproxy" "$@"
# Caddy, a reverse proxy written in Go on net/http, is measured too when a caddy binary is on
# PATH or named by CADDY (go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9).
caddy="${CADDY:-$(command -v caddy || true)}"
if [ -n "$caddy" ]; then
  set -- -caddy "$caddy" "$@"
fi
if [ -n "$pin" ]; then
  cpus="$(nproc)"
  if [ "$cpus" -lt 2 ] || ! command -v taskset >/dev/null 2>&1; then
    echo "bench-gateway: -pin needs taskset and at least 2 CPUs" >&2
    exit 1
  fi
  if [ "$cpus" -eq 2 ]; then targets=1; else targets="1-$((cpus - 1))"; fi
  taskset -c 0 "$bin" -target-cpus "$targets" "$@"
else
  "$bin" "$@"
fi
