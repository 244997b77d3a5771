package main

import (
	"strings"

	"boxoffice.dev/bff-mobile"
	"boxoffice.dev/bff-web"
	"boxoffice.dev/gateway"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/playground"
	"boxoffice.dev/services/assistant"
	"boxoffice.dev/services/auth"
	"boxoffice.dev/services/catalog"
	"boxoffice.dev/services/inventory"
	"boxoffice.dev/services/notification"
	"boxoffice.dev/services/order"
	"boxoffice.dev/services/payment"
	"boxoffice.dev/services/search"
	"boxoffice.dev/services/waitroom"
)

// component is one process of the system as `boxoffice up` runs it: its entry point and the
// fixed loopback ports of each instance. Catalog, inventory and order run twice so the
// gateway's balancing is visible.
type component struct {
	name      string
	run       server.RunFunc
	instances []ports
	// front: the component drives the others (the playground turns the gateway's limits and
	// the services' knobs during a run), so `up` stops it first and the rest only once it has
	// returned: its clean-up must reach them while they still serve. Nothing balances over a
	// front component, so it skips the drain delay.
	front bool
}

type ports struct{ http, grpc int }

// Port plan: services 81xx (HTTP) / 91xx (gRPC); a second instance adds 100; the gateway's
// admin API listens on 9080 and the embedded NATS on 4222. ports.go lists them all and says
// which port offsets keep two copies apart.
const (
	natsPort  = 4222
	adminPort = 9080
)

var components = []component{
	{"auth", auth.Run, []ports{{8101, 9101}}, false},
	{"catalog", catalog.Run, []ports{{8102, 9102}, {8202, 9202}}, false},
	{"search", search.Run, []ports{{8103, 9103}}, false},
	{"inventory", inventory.Run, []ports{{8104, 9104}, {8204, 9204}}, false},
	{"waitroom", waitroom.Run, []ports{{8105, 9105}}, false},
	{"order", order.Run, []ports{{8106, 9106}, {8206, 9206}}, false},
	{"payment", payment.Run, []ports{{8107, 9107}}, false},
	{"notification", notification.Run, []ports{{8108, 9108}}, false},
	{"assistant", assistant.Run, []ports{{8109, 9109}}, false},
	{"bff-mobile", bffmobile.Run, []ports{{8111, 0}}, false},
	{"bff-web", bffweb.Run, []ports{{8112, 0}}, false},
	{"gateway", gateway.Run, []ports{{8080, 0}}, false},
	{"playground", playground.Run, []ports{{8090, 0}}, true},
}

// wiring is the environment that tells components where the others listen: every address a
// component dials, shifted by the port offset like the listeners.
func wiring(offset int) map[string]string {
	first := func(name string, grpc bool) string {
		for _, c := range components {
			if c.name == name {
				if grpc {
					return addr(c.instances[0].grpc + offset)
				}
				return addr(c.instances[0].http + offset)
			}
		}
		return "" // a typo in this file; TestWiringNamesEveryAddress catches it
	}
	env := map[string]string{
		"AUTH_URL":            "http://" + first("auth", false),
		"AUTH_GRPC_ADDR":      first("auth", true),
		"CATALOG_GRPC_ADDR":   first("catalog", true),
		"INVENTORY_GRPC_ADDR": first("inventory", true),
		"PAYMENT_GRPC_ADDR":   first("payment", true),
		"ADMIN_ADDR":          addr(adminPort + offset),
		// The playground sends its simulated clients through the gateway, each with a fake
		// client IP in X-Forwarded-For; the gateway believes that header only from the
		// loopback. A local-playground setting: a real deployment lists its edge proxies.
		"GATEWAY_URL":     "http://" + first("gateway", false),
		"PLAYGROUND_URL":  "http://" + first("playground", false), // shown by the gateway's index at /
		"TRUSTED_PROXIES": "127.0.0.1/32",
	}
	// The BFFs call these as well; GraphiQL is a local convenience, off unless asked.
	for _, name := range []string{"waitroom", "order", "search", "notification", "assistant"} {
		env[strings.ToUpper(name)+"_GRPC_ADDR"] = first(name, true)
	}
	env["GRAPHIQL"] = "true"
	// The gateway's upstreams: every instance of every component behind it.
	for _, c := range components {
		if c.name == "gateway" || c.name == "playground" {
			continue
		}
		var urls []string
		for _, p := range c.instances {
			urls = append(urls, "http://"+addr(p.http+offset))
		}
		env["UPSTREAM_"+strings.ToUpper(strings.ReplaceAll(c.name, "-", "_"))] = strings.Join(urls, ",")
	}
	return env
}
