// Package upstream connects a BFF to the services it calls, the same way for both BFFs.
package upstream

import (
	"fmt"
	"time"

	"google.golang.org/grpc"

	"boxoffice.dev/platform/grpcclient"
	"boxoffice.dev/platform/server"
)

// Connect dials every service in addrs (service name → host:port) with s's telemetry and
// timeout on each call, closes the connections with s, and makes the connection to essential
// a readiness check of s. Only one: readiness takes an instance out of rotation, and a
// service that every replica calls being down would take all of them out at once, where a
// partial answer (null for that service's fields, with an error) serves the client better.
func Connect(s *server.Server, timeout time.Duration, addrs map[string]string, essential string) (map[string]*grpc.ClientConn, error) {
	if _, ok := addrs[essential]; !ok {
		return nil, fmt.Errorf("upstream: essential service %q has no address", essential)
	}
	conns := make(map[string]*grpc.ClientConn, len(addrs))
	for service, addr := range addrs {
		conn, err := grpcclient.Dial(addr, grpcclient.Options{Telemetry: s.Telemetry, Timeout: timeout, Service: service})
		if err != nil {
			return nil, err
		}
		s.OnClose(conn.Close)
		conns[service] = conn
	}
	s.Health.Add(essential, grpcclient.Ready(conns[essential]))
	return conns, nil
}
