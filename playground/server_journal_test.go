package playground

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/playground/scenario"
)

// probePlayground is the playground process serving the probe scenario against the system
// target finds, its log written to logs when set.
func probePlayground(t *testing.T, target func() (scenario.Target, error), logs io.Writer) testkit.RunFunc {
	t.Helper()
	list := []scenario.Scenario{probeScenario(t)}
	return func(ctx context.Context, _ []string, getenv func(string) string, stdout, _ io.Writer) error {
		if logs != nil {
			stdout = logs
		}
		return server.Main(ctx, Spec, getenv, stdout, func(ctx context.Context, s *server.Server) (http.Handler, error) {
			return serve(ctx, s, list, target, scenario.Options{})
		})
	}
}

// helperEcho names the variable that makes TestHelperPlayground the playground process, and
// holds the echo system's URL.
const helperEcho = "PLAYGROUND_HELPER_ECHO"

// TestHelperPlayground is not a test of its own: it is the playground process that
// TestAPlaygroundKilledMidRunIsPutBackByTheNext runs from this test binary and kills.
func TestHelperPlayground(t *testing.T) {
	echo := os.Getenv(helperEcho)
	if echo == "" {
		t.Skip("the playground process of TestAPlaygroundKilledMidRunIsPutBackByTheNext")
	}
	target := scenario.Target{Gateway: echo, Services: map[string][]string{"echo": {echo}}}
	run := probePlayground(t, func() (scenario.Target, error) { return target, nil }, nil)
	if err := run(context.Background(), nil, os.Getenv, os.Stdout, os.Stderr); err != nil {
		t.Fatal(err)
	}
}

// A playground killed (SIGKILL) mid-run, after its run took the backend down, leaves the
// outage in force; the next playground started over the same DATA_DIR puts it back from the
// journal the dead one left.
func TestAPlaygroundKilledMidRunIsPutBackByTheNext(t *testing.T) {
	echo := echoSystem(t)
	backend := echo.Services["echo"][0]
	dataDir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	child := exec.Command(os.Args[0], "-test.run=^TestHelperPlayground$", "-test.count=1")
	child.Env = append(os.Environ(), helperEcho+"="+backend, "HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "LOG_LEVEL=error")
	if err := child.Start(); err != nil {
		t.Fatalf("start the playground process: %v", err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	})
	base := "http://" + addr
	testkit.Eventually(t, 30*time.Second, "the playground process answers /healthz", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	status, body := call(t, "POST", base+"/api/runs", map[string]string{"scenario": "probe"})
	if status != http.StatusAccepted {
		t.Fatalf("POST /api/runs = %d %s, want 202", status, body)
	}
	runURL := base + "/api/runs/" + decode[runInfo](t, body).ID
	testkit.Eventually(t, 15*time.Second, "the run is running", func() bool {
		_, b := call(t, "GET", runURL, nil)
		return decode[runInfo](t, b).State == stateRunning
	})
	if status, body := call(t, "POST", runURL+"/knobs", map[string]string{"name": "outage", "value": "down"}); status != http.StatusOK {
		t.Fatalf("POST knobs outage=down = %d %s, want 200", status, body)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatalf("kill the playground process: %v", err)
	}
	_ = child.Wait() // killed: its exit status says so
	killed = true
	if k := knobsOf(t, backend); !k.Outage {
		t.Fatalf("backend knobs after the playground was killed = %+v, want the outage still in force (nothing put it back)", k)
	}
	journal := filepath.Join(dataDir, journalFile)
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("stat the journal the killed playground left = %v, want it there", err)
	}

	testkit.RunProcess(t, probePlayground(t, func() (scenario.Target, error) { return echo, nil }, nil), map[string]string{"DATA_DIR": dataDir, "DRAIN_DELAY": "0s"})
	testkit.Eventually(t, 15*time.Second, "the next playground puts the backend back", func() bool {
		return knobsOf(t, backend) == control.Knobs{}
	})
	testkit.Eventually(t, 5*time.Second, "the journal is removed once all is put back", func() bool {
		_, err := os.Stat(journal)
		return errors.Is(err, fs.ErrNotExist)
	})
}

// deadRunJournal is a journal as a playground killed mid-run leaves it: the echo backend's
// knobs as the run found them (none turned), to put back.
const deadRunJournal = `{"entries":[{"n":1,"kind":"knobs","id":"echo","knobs":{"latency_ms":0,"error_rate":0,"outage":false,"max_concurrent":0,"service_time_ms":0}}]}`

// While a dead run's changes are being put back (here: the system is not up yet), a new run
// is refused with 503 and the run list says so; once they are, runs start.
func TestNoRunStartsWhileADeadRunIsPutBack(t *testing.T) {
	echo := echoSystem(t)
	backend := echo.Services["echo"][0]
	putKnobs(t, backend, control.Knobs{Outage: true}) // what the dead run left
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, journalFile), []byte(deadRunJournal), 0o644); err != nil {
		t.Fatal(err)
	}
	var up atomic.Bool
	target := func() (scenario.Target, error) {
		if !up.Load() {
			return scenario.Target{}, errors.New("no system to drive yet")
		}
		return echo, nil
	}
	p := testkit.RunProcess(t, probePlayground(t, target, nil), map[string]string{"DATA_DIR": dataDir, "DRAIN_DELAY": "0s"})

	status, body := call(t, "POST", p.HTTPURL+"/api/runs", map[string]string{"scenario": "probe"})
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "still being put back") {
		t.Errorf("POST /api/runs during the put-back = %d %s, want 503 saying the changes are still being put back", status, body)
	}
	if _, b := call(t, "GET", p.HTTPURL+"/api/runs", nil); !decode[struct {
		PuttingBack bool `json:"putting_back"`
	}](t, b).PuttingBack {
		t.Errorf("GET /api/runs during the put-back = %s, want putting_back true", b)
	}

	up.Store(true)
	testkit.Eventually(t, 15*time.Second, "the dead run's outage is put back", func() bool {
		return knobsOf(t, backend) == control.Knobs{}
	})
	testkit.Eventually(t, 5*time.Second, "a run starts", func() bool {
		status, _ := call(t, "POST", p.HTTPURL+"/api/runs", map[string]string{"scenario": "probe", "duration": "1s"})
		return status == http.StatusAccepted
	})
}

// A journal that cannot be read is set aside and logged as an error; the playground still
// starts, and runs.
func TestACorruptJournalDoesNotStopThePlayground(t *testing.T) {
	echo := echoSystem(t)
	dataDir := t.TempDir()
	journal := filepath.Join(dataDir, journalFile)
	if err := os.WriteFile(journal, []byte(`{"entries":[{`), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	p := testkit.RunProcess(t, probePlayground(t, func() (scenario.Target, error) { return echo, nil }, &logs), map[string]string{"DATA_DIR": dataDir, "DRAIN_DELAY": "0s"})

	if _, err := os.Stat(journal + ".corrupt"); err != nil {
		t.Errorf("stat %s.corrupt = %v, want the corrupt journal kept there", journal, err)
	}
	if got := logs.String(); !strings.Contains(got, `"level":"ERROR"`) || !strings.Contains(got, journal+".corrupt") {
		t.Errorf("log = %s, want an error naming %s.corrupt", got, journal)
	}
	if status, body := call(t, "POST", p.HTTPURL+"/api/runs", map[string]string{"scenario": "probe", "duration": "1s"}); status != http.StatusAccepted {
		t.Errorf("POST /api/runs = %d %s, want 202", status, body)
	}
}

// putKnobs sets a process's control knobs.
func putKnobs(t *testing.T, base string, k control.Knobs) {
	t.Helper()
	if status, body := call(t, "PUT", base+control.Path, k); status/100 != 2 {
		t.Fatalf("PUT %s%s = %d %s", base, control.Path, status, body)
	}
}

// lockedBuffer is a log the process writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
