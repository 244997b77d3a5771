package deploycheck

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// pgIsReadyOverTCP returns an error when the command args runs pg_isready on the server's
// Unix socket rather than over TCP (-h naming an address, not a socket directory). On its
// first start the postgres image creates its databases on a server listening only on the
// socket, then restarts it: pg_isready on the socket calls that server ready, and the
// services it lets start find TCP closed. A command that does not run pg_isready is nil.
func pgIsReadyOverTCP(args []string) error {
	i := slices.IndexFunc(args, func(a string) bool { return path.Base(a) == "pg_isready" })
	if i < 0 {
		return nil
	}
	host := ""
	for j := i + 1; j < len(args); j++ {
		switch a := args[j]; {
		case (a == "-h" || a == "--host") && j+1 < len(args):
			host, j = args[j+1], j+1
		case strings.HasPrefix(a, "--host="):
			host = strings.TrimPrefix(a, "--host=")
		case strings.HasPrefix(a, "-h") && len(a) > 2:
			host = a[2:]
		}
	}
	if host == "" || strings.HasPrefix(host, "/") {
		return fmt.Errorf("%q asks PostgreSQL over its Unix socket, which answers during its first-time setup while TCP is still closed: add -h 127.0.0.1", strings.Join(args, " "))
	}
	return nil
}

// checkComposePgIsReady: a healthcheck that runs pg_isready asks over TCP (pgIsReadyOverTCP).
func checkComposePgIsReady(p *types.Project) []error {
	var errs []error
	for _, name := range serviceNames(p) {
		hc := p.Services[name].HealthCheck
		if hc == nil || len(hc.Test) < 2 {
			continue
		}
		args := []string(hc.Test[1:]) // CMD: the words
		if hc.Test[0] == "CMD-SHELL" {
			args = shellWords(strings.Join(hc.Test[1:], " "))
		}
		if err := pgIsReadyOverTCP(args); err != nil {
			errs = append(errs, fmt.Errorf("service %s: healthcheck %w", name, err))
		}
	}
	return errs
}
