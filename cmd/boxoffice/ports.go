package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// offsetStep is how far apart the port offsets of copies of `up` on one machine must be: one
// copy's ports span less than it (NATS's 4222 to the second instances' 92xx), so copies
// whose offsets differ by a multiple of it never share a port. A smaller difference, such as
// 1000, can land one copy's HTTP port on another's gRPC port (8101+1000 = 9101).
const offsetStep = 5000

// plannedPort is a port `up` listens on and what listens there ("order-2 gRPC").
type plannedPort struct {
	port int
	what string
}

// planPorts lists every port `up` listens on at port offset off.
func planPorts(off int) []plannedPort {
	ps := []plannedPort{{natsPort + off, "NATS"}, {adminPort + off, "gateway admin API"}}
	for _, c := range components {
		for i, p := range c.instances {
			name := c.name
			if len(c.instances) > 1 {
				name += "-" + strconv.Itoa(i+1)
			}
			ps = append(ps, plannedPort{p.http + off, name + " HTTP"})
			if p.grpc != 0 {
				ps = append(ps, plannedPort{p.grpc + off, name + " gRPC"})
			}
		}
	}
	return ps
}

// safeOffsets are the offsets a copy of `up` can take beside a copy at offset 0: multiples of
// offsetStep whose ports all stay below the kernel's ephemeral range (see ephemeralPorts).
func safeOffsets() []int {
	first, _ := ephemeralPorts()
	highest := 0
	for _, p := range planPorts(0) {
		highest = max(highest, p.port)
	}
	var offs []int
	for off := offsetStep; highest+off < first; off += offsetStep {
		offs = append(offs, off)
	}
	return offs
}

// checkPorts makes sure every port `up` will listen on at offset off is in range and free
// now, before anything starts: a clash found after the start leaves a half-started system
// and an error from deep inside one component. A taken port's error is a *portTakenError.
func checkPorts(off int) error {
	for _, p := range planPorts(off) {
		if p.port < 1024 || p.port > 65535 {
			return fmt.Errorf("--port-offset %d puts the %s on port %d, want 1024 to 65535", off, p.what, p.port)
		}
	}
	for _, p := range planPorts(off) {
		if !portFree(p.port) {
			free, found := freeSafeOffset(off)
			return &portTakenError{plannedPort: p, free: free, found: found}
		}
	}
	return nil
}

// portTakenError says which planned port is in use and, when found, an offset whose ports
// are all free now.
type portTakenError struct {
	plannedPort
	free  int
	found bool
}

func (e *portTakenError) Error() string {
	hint := fmt.Sprintf("no offset of 0 or a multiple of %d has every port free", offsetStep)
	if e.found {
		hint = fmt.Sprintf("try --port-offset %d, whose ports are all free now", e.free)
	}
	return fmt.Sprintf("port %d (%s) is in use, by another copy of boxoffice up or another program; %s "+
		"(copies whose offsets differ by a multiple of %d never share a port)", e.port, e.what, hint, offsetStep)
}

// freeSafeOffset returns the first of 0 and safeOffsets, other than not, whose ports are all
// free now.
func freeSafeOffset(not int) (int, bool) {
	for _, off := range append([]int{0}, safeOffsets()...) {
		if off != not && portsFree(off) {
			return off, true
		}
	}
	return 0, false
}

// pickOffset picks at random an offset whose ports are all free now, for a system started
// beside whatever runs on the machine (`scenario run`, tests). Its ports stay below the
// ephemeral range: a port inside it can be taken, between the check and the bind, by any
// outgoing connection.
func pickOffset() (int, error) {
	first, _ := ephemeralPorts()
	lowest, highest := 65535, 0
	for _, p := range planPorts(0) {
		lowest, highest = min(lowest, p.port), max(highest, p.port)
	}
	hi := first - 1 - highest // the largest offset whose ports all stay below the range
	lo := min(10000, hi/2)
	if lo < 1024-lowest || hi <= lo {
		return 0, fmt.Errorf("no room for up's ports (%d..%d) below the ephemeral range starting at %d", lowest, highest, first)
	}
	for range 50 {
		if off := lo + rand.IntN(hi-lo+1); portsFree(off) {
			return off, nil
		}
	}
	return 0, errors.New("no free port offset found")
}

func portsFree(off int) bool {
	return !slices.ContainsFunc(planPorts(off), func(p plannedPort) bool { return !portFree(p.port) })
}

// portFree reports whether a loopback listener can be opened on port now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", addr(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralPorts is the range the kernel picks local ports from for outgoing connections and
// ":0" listeners: Linux's net.ipv4.ip_local_port_range, or its default where that cannot be read.
func ephemeralPorts() (first, last int) {
	first, last = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return first, last
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return first, last
	}
	a, errA := strconv.Atoi(f[0])
	z, errZ := strconv.Atoi(f[1])
	if errA != nil || errZ != nil || a <= 0 || z < a {
		return first, last
	}
	return a, z
}
