//go:build linux

package upstream

import (
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// fullListener returns the address of a socket that listens but never accepts, with its
// accept queue already full: the kernel drops further SYNs, so a connect to it hangs until
// the dialer gives up. It skips the test when this kernel completes the connect anyway.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return addr // the queue is full: this connect hung until its timeout
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("this kernel accepts connects beyond a full accept queue")
	return ""
}

func TestConnectTimeout(t *testing.T) {
	hung := "http://" + fullListener(t)
	b := newBackend(t, nil)
	for _, c := range []struct {
		name       string
		retry      bool
		wantStatus int
		wantFrom   string
	}{
		{"retried on the other instance", true, http.StatusOK, b.url},
		{"not retryable", false, http.StatusGatewayTimeout, hung},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{hung, b.url}, Probe: ProbeConfig{Disabled: true}}},
				Options{Rand: first}, RouteOptions{ConnectTimeout: 50 * time.Millisecond}, false)
			start := time.Now()
			res := g.do(t, "GET", "/x", nil, c.retry)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("request took %v, want about the 50ms connect timeout", took)
			}
			if res.status != c.wantStatus || res.upstream != c.wantFrom {
				t.Errorf("status %d from %q, want %d from %s", res.status, res.upstream, c.wantStatus, c.wantFrom)
			}
		})
	}
}
