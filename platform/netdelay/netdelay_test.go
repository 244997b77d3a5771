package netdelay

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func listen(t *testing.T, target string, rtt time.Duration) *Link {
	t.Helper()
	l, err := Listen(target, rtt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// exchange sends a line and reads it back, returning how long it took.
func exchange(t *testing.T, c net.Conn, r *bufio.Reader, line string) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(got) != line {
		t.Fatalf("echo = %q, want %q", got, line)
	}
	return time.Since(start)
}

func TestLinkDelaysEveryRoundTripAndCountsIt(t *testing.T) {
	l := listen(t, echo(t), 40*time.Millisecond)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	r := bufio.NewReader(c)
	for i := range 3 {
		if took := exchange(t, c, r, "ping"); took < 40*time.Millisecond {
			t.Errorf("exchange %d took %v, want at least the 40ms round trip", i, took)
		}
	}
	if got := l.Trips(); got != 3 {
		t.Errorf("Trips = %d, want 3", got)
	}

	l.SetRTT(0)
	if l.RTT() != 0 {
		t.Errorf("RTT = %v after SetRTT(0)", l.RTT())
	}
	// Without the delay an exchange on loopback is far below 40ms; the bound is loose so a
	// loaded machine does not fail it, and it still tells the two settings apart.
	if took := exchange(t, c, r, "pong"); took >= 40*time.Millisecond {
		t.Errorf("exchange took %v with no delay, want under 40ms", took)
	}
}

func TestLinkKeepsOrderUnderPipelining(t *testing.T) {
	l := listen(t, echo(t), 10*time.Millisecond)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	var sent strings.Builder
	for i := range 200 {
		sent.WriteString(strings.Repeat("x", i%7) + "|")
	}
	want := sent.String()
	go func() {
		for i := 0; i < len(want); i += 13 { // many small writes, each delayed alone
			_, _ = io.WriteString(c, want[i:min(i+13, len(want))])
		}
	}()
	got := make([]byte, len(want))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Error("bytes came back out of order or changed")
	}
}

func TestLinkCloseCutsConnectionsAndARefusedTargetEndsTheClient(t *testing.T) {
	l, err := Listen(echo(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	exchange(t, c, bufio.NewReader(c), "hello")
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("read after Close succeeded, want the connection cut")
	}

	// A target that refuses: the client is connected to the link, then cut.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	_ = ln.Close()
	l2 := listen(t, dead, 0)
	c2, err := net.Dial("tcp", l2.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c2.Close() }()
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c2.Read(make([]byte, 1)); err == nil {
		t.Error("read through a link to a dead target succeeded")
	}
}

func TestListenRefusesANegativeRoundTrip(t *testing.T) {
	if _, err := Listen("127.0.0.1:1", -time.Millisecond); err == nil {
		t.Error("Listen with a negative round trip succeeded")
	}
}
