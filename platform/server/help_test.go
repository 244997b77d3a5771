package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
)

// execEnv makes this test binary run demoMain in place of the tests (see TestMain), so that
// a test can run server.Exec as a process with arguments of its choosing.
const execEnv = "SERVER_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) != "" {
		server.Exec(demoMain)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// demoMain is a deployable with one setting of its own whose build fails: it has started
// when it says so.
func demoMain(ctx context.Context, _ []string, getenv func(string) string, stdout, _ io.Writer) error {
	return server.MainWith(ctx, server.Spec{Name: "demo", HTTPAddr: ":8999"}, getenv, stdout,
		func(r *config.Reader) int { return r.Int("DEMO_WORKERS", 4, 1, 64) },
		func(context.Context, *server.Server, int) (http.Handler, error) {
			return nil, errors.New("demo started")
		})
}

// A deployable asked for help lists the variables it reads with their defaults, the
// platform's and its own, and exits 0 without starting; with any other argument it starts.
func TestExecHelpListsSettings(t *testing.T) {
	settings := [][]string{
		{"HTTP_ADDR", ":8999", "a listen address"}, {"DRAIN_DELAY", "3s"}, {"SHUTDOWN_TIMEOUT", "10s", "a positive duration"},
		{"DATABASE_URL", "(unset)", "a URL with scheme postgres"}, {"DEMO_WORKERS", "4", "an integer from 1 to 64"},
	}
	for _, tt := range []struct {
		arg      string
		wantHelp bool
		want     [][]string // lines, each a run of fields apart by blanks
	}{
		{"--help", true, append(settings, []string{"demo takes no flags"})},
		{"-h", true, settings},
		{"--port=1", false, [][]string{{"demo: start: demo started"}}},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tt.arg)
			cmd.Env = append(os.Environ(), execEnv+"=1", "LOG_LEVEL=error")
			out, err := cmd.CombinedOutput()
			if exited := err == nil; exited != tt.wantHelp {
				t.Errorf("demo %s exited with %v, want success %v\n%s", tt.arg, err, tt.wantHelp, out)
			}
			for _, fields := range tt.want {
				quoted := make([]string, len(fields))
				for i, f := range fields {
					quoted[i] = regexp.QuoteMeta(f)
				}
				if line := regexp.MustCompile(`(?m)^\s*` + strings.Join(quoted, `\s+`)); !line.Match(out) {
					t.Errorf("demo %s printed\n%s\nwant a line matching %s", tt.arg, out, line)
				}
			}
		})
	}
}
