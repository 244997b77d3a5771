// Command healthcheck asks a BoxOffice process whether it is healthy: it GETs a URL and exits
// 0 on a 2xx answer, 1 otherwise. It exists because the runtime image is distroless, with no
// shell, curl or wget, so a container healthcheck (`docker compose`'s `test: [CMD, …]`) needs a
// binary of its own; this one is built into every image beside the service.
//
//	healthcheck [-timeout 2s] http://127.0.0.1:8102/readyz
//
// Kubernetes does not need it: its probes make the HTTP request themselves.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}
