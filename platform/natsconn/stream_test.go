package natsconn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

func TestEnsureStreamSetsLimits(t *testing.T) {
	js := testkit.JetStream(t, testkit.StartNATS(t).ClientURL())
	tests := []struct {
		name         string
		opts         natsconn.StreamOptions
		wantAge      time.Duration
		wantBytes    int64
		wantReplicas int
	}{
		{"defaults", natsconn.StreamOptions{}, natsconn.StreamMaxAge, natsconn.StreamMaxBytes, 1},
		{"chosen", natsconn.StreamOptions{MaxAge: time.Hour, MaxBytes: 1 << 20, Replicas: 1}, time.Hour, 1 << 20, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("LIMITS%d", i)
			s, err := natsconn.EnsureStreamWith(t.Context(), js, name, []string{strings.ToLower(name) + ".>"}, tt.opts)
			if err != nil {
				t.Fatalf("EnsureStreamWith(%+v): %v", tt.opts, err)
			}
			cfg := s.CachedInfo().Config
			if cfg.MaxAge != tt.wantAge || cfg.MaxBytes != tt.wantBytes || cfg.Replicas != tt.wantReplicas || cfg.Discard != jetstream.DiscardOld {
				t.Errorf("EnsureStreamWith(%+v) config = MaxAge %v, MaxBytes %d, Replicas %d, Discard %v; want %v, %d, %d, %v",
					tt.opts, cfg.MaxAge, cfg.MaxBytes, cfg.Replicas, cfg.Discard, tt.wantAge, tt.wantBytes, tt.wantReplicas, jetstream.DiscardOld)
			}
		})
	}
}

// A stream with a byte limit drops its oldest events when full rather than refusing new
// ones: publishing more than the server's whole store goes on working. Without a limit the
// store fills and every publish fails with "insufficient resources".
func TestStreamKeepsAcceptingEventsPastItsLimit(t *testing.T) {
	const store = 256 << 10
	srv := testkit.StartNATSServer(t, func(o *server.Options) { o.JetStreamMaxStore = store })
	js := testkit.JetStream(t, srv.ClientURL())
	const limit = 128 << 10
	s, err := natsconn.EnsureStreamWith(t.Context(), js, "FULL", []string{"full.>"}, natsconn.StreamOptions{MaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", 4<<10))
	const n = 2 * store / (4 << 10) // twice the server's store
	for i := range n {
		if _, err := js.Publish(t.Context(), "full.thing", payload); err != nil {
			t.Fatalf("Publish #%d of %d (%d KiB published, store %d KiB): %v", i+1, n, i*4, store>>10, err)
		}
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Bytes > limit || info.State.FirstSeq == 1 || info.State.LastSeq != n {
		t.Errorf("stream after %d publishes: %d bytes, seqs %d..%d; want at most %d bytes, the first events dropped, last %d",
			n, info.State.Bytes, info.State.FirstSeq, info.State.LastSeq, limit, n)
	}
}

// A stream an older build created without limits gets them from the next EnsureStream, and
// is trimmed to them.
func TestEnsureStreamLimitsAnOlderStream(t *testing.T) {
	js := testkit.JetStream(t, testkit.StartNATS(t).ClientURL())
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OLD", Subjects: []string{"old.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", 1<<10))
	for range 64 {
		if _, err := js.Publish(ctx, "old.thing", payload); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 16 << 10
	s, err := natsconn.EnsureStreamWith(ctx, js, "OLD", []string{"old.>"}, natsconn.StreamOptions{MaxBytes: limit, MaxAge: time.Hour})
	if err != nil {
		t.Fatalf("EnsureStreamWith on a stream without limits: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxBytes != limit || info.Config.MaxAge != time.Hour {
		t.Errorf("updated config = MaxBytes %d, MaxAge %v; want %d, %v", info.Config.MaxBytes, info.Config.MaxAge, limit, time.Hour)
	}
	if info.State.Bytes > limit || info.State.LastSeq != 64 {
		t.Errorf("updated stream holds %d bytes up to seq %d, want at most %d up to 64", info.State.Bytes, info.State.LastSeq, limit)
	}
}

// On a three-server cluster a stream of three replicas, created so or raised from one by an
// update, keeps accepting events while the server leading it is down.
func TestStreamWithReplicasOutlivesAServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server cluster")
	}
	tests := []struct {
		name  string
		older bool // the stream exists with one replica, as an older build left it
	}{
		{"created", false},
		{"updated", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := startCluster(t, 3)
			var urls []string
			for _, n := range nodes {
				urls = append(urls, n.ClientURL())
			}
			nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ensure := func(o natsconn.StreamOptions) jetstream.Stream {
				t.Helper()
				var s jetstream.Stream
				testkit.Eventually(t, 20*time.Second, fmt.Sprintf("stream with %+v on the cluster", o), func() bool {
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
					defer cancel()
					s, err = natsconn.EnsureStreamWith(ctx, js, "REPL", []string{"repl.>"}, o)
					return err == nil
				})
				return s
			}
			if tt.older {
				ensure(natsconn.StreamOptions{})
			}
			s := ensure(natsconn.StreamOptions{Replicas: 3})
			var info *jetstream.StreamInfo
			testkit.Eventually(t, 20*time.Second, "three current replicas", func() bool {
				info, err = s.Info(t.Context())
				if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
					return false
				}
				for _, r := range info.Cluster.Replicas {
					if !r.Current {
						return false
					}
				}
				return true
			})
			if info.Config.Replicas != 3 {
				t.Fatalf("Replicas = %d, want 3", info.Config.Replicas)
			}
			if _, err := js.Publish(t.Context(), "repl.a", []byte("1")); err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				if n.Name() == info.Cluster.Leader {
					n.Shutdown()
					n.WaitForShutdown()
				}
			}
			testkit.Eventually(t, 15*time.Second, "a publish with the stream's leader down", func() bool {
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				_, err := js.Publish(ctx, "repl.b", []byte("2"))
				return err == nil
			})
		})
	}
}

// startCluster starts n JetStream servers routed to each other as one cluster.
func startCluster(t *testing.T, n int) []*server.Server {
	t.Helper()
	var ports []int
	var routes []string
	for range n {
		p := testkit.FreePort(t)
		ports = append(ports, p)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var nodes []*server.Server
	for i, p := range ports {
		nodes = append(nodes, testkit.StartNATSServer(t, func(o *server.Options) {
			o.ServerName = fmt.Sprintf("n%d", i)
			o.Cluster.Name = "boxoffice"
			o.Cluster.Host = "127.0.0.1"
			o.Cluster.Port = p
			o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		}))
	}
	return nodes
}
