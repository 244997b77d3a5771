// Package upstream connects a BFF to the services it calls, the same way for both BFFs.
package upstream

import (
	"fmt"

	"google.golang.org/grpc"

	"boxoffice.dev/platform/grpcclient"
	"boxoffice.dev/platform/server"
)

// Connect dials every service in addrs (service name → host:port) with s's telemetry and
// d's deadline on each call (WithDeadlines), closes the connections with s, and makes the
// connection to essential, and only that one, a readiness check of s: a service every replica
// calls being down would take them all out of rotation at once, where a partial answer (null
// for that service's fields, with an error) serves the client better.
func Connect(s *server.Server, d Deadlines, addrs map[string]string, essential string) (map[string]grpc.ClientConnInterface, error) {
	if _, ok := addrs[essential]; !ok {
		return nil, fmt.Errorf("upstream: essential service %q has no address", essential)
	}
	conns := make(map[string]grpc.ClientConnInterface, len(addrs))
	for service, addr := range addrs {
		// No timeout of grpcclient's own: WithDeadlines picks each call's by its method.
		conn, err := grpcclient.Dial(addr, grpcclient.Options{Telemetry: s.Telemetry, Service: service})
		if err != nil {
			return nil, err
		}
		s.OnClose(conn.Close)
		if service == essential {
			s.Health.Add(essential, grpcclient.Ready(conn))
		}
		conns[service] = WithDeadlines(conn, d)
	}
	return conns, nil
}
