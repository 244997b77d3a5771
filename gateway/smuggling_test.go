package gateway

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// A request that gives its length both in Content-Length and in Transfer-Encoding gets a 400
// at the gateway's edge and its connection is closed, so the bytes after it, which a proxy
// in front may have framed as part of its body, never reach a route as a request of their
// own (request smuggling).
func TestAmbiguousLengthClosesTheConnection(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL()})
	hits := be.hits.Load()

	c, err := net.Dial("tcp", strings.TrimPrefix(gw.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = io.WriteString(c, "POST /v1/auth/login HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"+
		"Content-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+
		"GET /v1/public HTTP/1.1\r\nHost: gateway\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to the ambiguous request: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("ambiguous request = %d %s, want 400 application/problem+json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if next, err := http.ReadResponse(br, nil); err == nil {
		t.Errorf("the request after it was answered %d, want the connection closed first", next.StatusCode)
	} else if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Errorf("the connection stays open after the refusal, want it closed")
	}
	if n := be.hits.Load() - hits; n != 0 {
		t.Errorf("the backend got %d requests, want none", n)
	}
}
