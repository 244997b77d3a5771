package testkit

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a three-master Redis Cluster of real redis-server processes on loopback.
type RedisCluster struct {
	t     testing.TB
	Nodes []*Redis
}

// StartRedisCluster starts three cluster-enabled redis-servers, joins them with
// `redis-cli --cluster create` (no replicas) and waits until every node reports cluster_state:ok.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	cli := LookPath(t, "redis-cli")
	c := &RedisCluster{t: t}
	for range 3 {
		r := &Redis{t: t, bin: LookPath(t, "redis-server"), dir: t.TempDir(), port: FreePort(t),
			args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}}
		r.Start()
		t.Cleanup(r.Stop)
		c.Nodes = append(c.Nodes, r)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	Eventually(t, 15*time.Second, "redis cluster state ok", func() bool {
		for _, n := range c.Nodes {
			cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
			info, err := cl.ClusterInfo(context.Background()).Result()
			_ = cl.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	return c
}

// Addrs lists the nodes' host:port.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a cluster client, closed when the test ends.
func (c *RedisCluster) Client() *redis.ClusterClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	c.t.Cleanup(func() { _ = cl.Close() })
	return cl
}
