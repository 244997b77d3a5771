package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// freeOffset finds a port offset at which every port of `up` is free, below the kernel's
// ephemeral range (see pickOffset).
func freeOffset(t *testing.T) int {
	t.Helper()
	off, err := pickOffset()
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func TestUpServesEveryComponentAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	off := freeOffset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testkit.Buffer
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		done <- run(ctx, []string{"boxoffice", "up", "--data-dir", dir, "--port-offset", strconv.Itoa(off)},
			func(string) string { return "" }, &out, &out)
	}()

	path := filepath.Join(dir, "endpoints.json")
	var ep Endpoints
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &ep) == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("up returned before writing endpoints.json: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoints.json did not appear\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("ready after %v", time.Since(started))

	urls := []string{ep.Gateway, ep.Playground}
	for _, list := range ep.Services {
		urls = append(urls, list...)
	}
	for _, list := range ep.BFFs {
		urls = append(urls, list...)
	}
	if got, want := len(ep.Services), 9; got != want {
		t.Errorf("endpoints.json lists %d services, want %d", got, want)
	}
	for _, name := range []string{"catalog", "inventory", "order"} {
		if got := len(ep.Services[name]); got != 2 {
			t.Errorf("%s has %d instances, want 2", name, got)
		}
	}
	if ep.Gateway != "http://127.0.0.1:"+strconv.Itoa(8080+off) {
		t.Errorf("gateway = %q, want port %d", ep.Gateway, 8080+off)
	}
	for _, u := range urls {
		resp, err := http.Get(u + "/healthz")
		if err != nil {
			t.Errorf("GET %s/healthz: %v", u, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s/healthz = %d, want 200", u, resp.StatusCode)
		}
	}

	if len(ep.Users) == 0 || len(ep.Partners) != 3 || ep.Admin.Token == "" {
		t.Errorf("endpoints.json credentials = users %v partners %v admin %+v, want demo users, 3 partners and an admin token", ep.Users, ep.Partners, ep.Admin)
	}
	// Through the gateway (on the offset ports): the catalog's demo events are listed.
	resp, err := http.Get(ep.Gateway + "/v1/events?limit=5")
	if err != nil {
		t.Fatalf("GET gateway /v1/events: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s/v1/events = %d, want 200 from a catalog instance behind the gateway", ep.Gateway, resp.StatusCode)
	}
	// Demo data: the flash-sale event has a seat map on both inventory instances.
	for _, u := range ep.Services["inventory"] {
		resp, err := http.Get(u + "/v1/events/evt-flash/seats")
		if err != nil {
			t.Fatalf("GET seats: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s/v1/events/evt-flash/seats = %d, want 200 (seeded)", u, resp.StatusCode)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("up after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("up did not stop within 5s of cancel")
	}
}

func TestWiringNamesEveryAddress(t *testing.T) {
	for k, v := range wiring(0) {
		if v == "" || v == "http://" {
			t.Errorf("wiring()[%s] is empty: a component name in wiring() is misspelt", k)
		}
	}
	w := wiring(100)
	if got := w["CATALOG_GRPC_ADDR"]; got != "127.0.0.1:9202" {
		t.Errorf("wiring(100)[CATALOG_GRPC_ADDR] = %q, want the offset applied (127.0.0.1:9202)", got)
	}
	if got, want := w["UPSTREAM_CATALOG"], "http://127.0.0.1:8202,http://127.0.0.1:8302"; got != want {
		t.Errorf("wiring(100)[UPSTREAM_CATALOG] = %q, want %q", got, want)
	}
	if got := w["UPSTREAM_BFF_MOBILE"]; got != "http://127.0.0.1:8211" {
		t.Errorf("wiring(100)[UPSTREAM_BFF_MOBILE] = %q, want http://127.0.0.1:8211", got)
	}
}

// startUp runs `boxoffice up` in-process on free ports with its data in a temporary
// directory, waits for endpoints.json, and stops it when the test ends, failing the test if
// it does not stop cleanly.
func startUp(t *testing.T) Endpoints {
	t.Helper()
	u := startUpIn(t, t.TempDir(), freeOffset(t))
	t.Cleanup(func() { u.stop(t) })
	return u.ep
}

// upProcess is `boxoffice up` running in this test.
type upProcess struct {
	ep     Endpoints
	cancel context.CancelFunc
	done   chan error
	logs   func() string
}

// startUpIn runs `boxoffice up` on dir and port offset off, and waits for the endpoints.json
// it writes once the system is up (one an earlier up left in dir is removed first). The
// caller stops it.
func startUpIn(t *testing.T, dir string, off int) *upProcess {
	t.Helper()
	return startUpWith(t, dir, off, nil)
}

// startUpWith is startUpIn with env as the environment `up` runs in, which every component
// it starts sees under up's own wiring (nil = an empty one).
func startUpWith(t *testing.T, dir string, off int, env map[string]string) *upProcess {
	t.Helper()
	path := filepath.Join(dir, "endpoints.json")
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &testkit.Buffer{}
	u := &upProcess{cancel: cancel, done: make(chan error, 1), logs: out.String}
	go func() {
		u.done <- run(ctx, []string{"boxoffice", "up", "--data-dir", dir, "--port-offset", strconv.Itoa(off)},
			func(k string) string { return env[k] }, out, out)
	}()
	testkit.Eventually(t, 60*time.Second, "boxoffice up writes endpoints.json", func() bool {
		select {
		case err := <-u.done:
			cancel()
			t.Fatalf("up returned before writing endpoints.json: %v\n%s", err, u.logs())
		default:
		}
		b, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(b, &u.ep) == nil && u.ep.Playground != ""
	})
	return u
}

// stop cancels up, as Ctrl-C does, and fails the test unless it returns nil within 15s.
func (u *upProcess) stop(t *testing.T) {
	t.Helper()
	u.cancel()
	select {
	case err := <-u.done:
		if err != nil {
			t.Errorf("up after cancel = %v, want nil\n%s", err, u.logs())
		}
	case <-time.After(15 * time.Second):
		t.Errorf("up did not stop within 15s of cancel")
	}
}
