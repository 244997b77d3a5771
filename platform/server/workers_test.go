package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
)

func TestWorkerStopsAfterTheListenersAndRunWaitsForIt(t *testing.T) {
	started := make(chan struct{})
	dialAfterCancel := make(chan error, 1)
	stopped := make(chan struct{})
	var addr string
	url, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		addr = s.Config.HTTPAddr
		s.Go("probe", func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			// The listeners have closed by now: new connections are refused.
			conn, err := net.Dial("tcp", addr)
			if err == nil {
				conn.Close()
			}
			dialAfterCancel <- err
			close(stopped)
			return nil
		})
		return nil, nil
	})
	<-started
	if resp, err := http.Get(url + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz with a worker running = %v, %v; want 200", resp, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Main = %v, want nil", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Main returned before its worker did")
	}
	if err := <-dialAfterCancel; err == nil {
		t.Error("the worker's ctx ended while the HTTP listener still accepted, want it closed first")
	}
}

func TestWorkerFailureStopsTheProcess(t *testing.T) {
	fail := make(chan struct{})
	url, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		s.Go("lease", func(ctx context.Context) error {
			select {
			case <-fail:
				return errors.New("lost the lease")
			case <-ctx.Done():
				return nil
			}
		})
		return nil, nil
	})
	close(fail)
	testkit.Eventually(t, 5*time.Second, "the process stops by itself", func() bool {
		_, err := http.Get(url + "/healthz")
		return err != nil
	})
	if err := stop(); err == nil || !strings.Contains(err.Error(), "worker lease: lost the lease") {
		t.Errorf("Main after a worker failed = %v, want the worker's error", err)
	}
}

// TestEveryRetriesAFailingJob: a periodic job that fails is tried again at the next tick and
// the process keeps serving, unlike a worker of Go that returns an error.
func TestEveryRetriesAFailingJob(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	url, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		s.Every("flaky", time.Millisecond, func(ctx context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			runs++
			return errors.New("database unreachable")
		})
		return nil, nil
	})
	testkit.Eventually(t, 5*time.Second, "the failing job runs three times", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return runs >= 3
	})
	if resp, err := http.Get(url + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz after the job failed = %v, %v; want 200: a periodic job's failure must not stop the process", resp, err)
	}
	if err := stop(); err != nil {
		t.Errorf("Main = %v, want nil", err)
	}
}

func TestWorkerCancelledIsNotAFailure(t *testing.T) {
	_, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		s.Go("waits", func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err() // context.Canceled at shutdown is how it was asked to end
		})
		return nil, nil
	})
	if err := stop(); err != nil {
		t.Errorf("Main with a worker returning ctx.Err() at shutdown = %v, want nil", err)
	}
}

func TestWorkerOutlivingTheDeadlineIsReported(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	_, stop := startMain(t, map[string]string{"SHUTDOWN_TIMEOUT": "100ms"}, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		s.Go("stubborn", func(context.Context) error {
			<-release // ignores its context
			return nil
		})
		return nil, nil
	})
	if err := stop(); err == nil || !strings.Contains(err.Error(), "workers still running after the shutdown deadline: [stubborn]") {
		t.Errorf("Main with a worker ignoring shutdown = %v, want an error naming it", err)
	}
}

func TestWorkersStopWhenBuildFails(t *testing.T) {
	stopped := make(chan struct{})
	buildErr := errors.New("no database")
	err := server.Main(context.Background(), server.Spec{Name: "probe", HTTPAddr: "127.0.0.1:0"},
		func(k string) string { return map[string]string{"DATA_DIR": t.TempDir()}[k] }, tlog{t},
		func(ctx context.Context, s *server.Server) (http.Handler, error) {
			s.Go("early", func(ctx context.Context) error {
				<-ctx.Done()
				close(stopped)
				return nil
			})
			return nil, buildErr
		})
	if !errors.Is(err, buildErr) {
		t.Fatalf("Main = %v, want the build error", err)
	}
	select {
	case <-stopped:
	default:
		t.Error("Main returned with a worker started by a failed build still running")
	}
}

// commitOneEvent opens s's database and its outbox relay to the stream PROBE, and commits one
// event, evt-1, for the relay to publish.
func commitOneEvent(ctx context.Context, s *server.Server) (*outbox.Relay, error) {
	db, err := s.OpenDB(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := outbox.EnsureTable(ctx, db); err != nil {
		return nil, err
	}
	relay, err := s.RelayOutbox(ctx, db, "PROBE", "boxoffice.probe.>")
	if err != nil || relay == nil {
		return nil, errors.Join(err, errors.New("no relay with NATS_URL set"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	ev := outbox.Event{ID: "evt-1", Subject: "boxoffice.probe.thing.made", Payload: []byte(`{}`)}
	if err := errors.Join(outbox.Add(ctx, tx, db, ev), tx.Commit()); err != nil {
		return nil, err
	}
	return relay, nil
}

func TestRelayOutboxPublishesCommittedEvents(t *testing.T) {
	ns := testkit.StartNATS(t)
	committed := make(chan func(), 1)
	startMain(t, map[string]string{"NATS_URL": ns.ClientURL()}, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		relay, err := commitOneEvent(ctx, s)
		if err != nil {
			return nil, err
		}
		committed <- relay.Notify
		return nil, nil
	})
	(<-committed)()

	js := testkit.JetStream(t, ns.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var msg *jetstream.RawStreamMsg
	testkit.Eventually(t, 5*time.Second, "the event is on the PROBE stream", func() bool {
		stream, err := js.Stream(ctx, "PROBE")
		if err != nil {
			return false
		}
		msg, err = stream.GetMsg(ctx, 1)
		return err == nil
	})
	if msg.Subject != "boxoffice.probe.thing.made" || msg.Header.Get(jetstream.MsgIDHeader) != "evt-1" {
		t.Errorf("stream message = %s with Nats-Msg-Id %q, want boxoffice.probe.thing.made with evt-1", msg.Subject, msg.Header.Get(jetstream.MsgIDHeader))
	}
}

func TestRelayOutboxWithoutNATSIsNil(t *testing.T) {
	got := make(chan error, 1)
	startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		db, err := s.OpenDB(ctx, nil)
		if err != nil {
			return nil, err
		}
		relay, err := s.RelayOutbox(ctx, db, "PROBE", "boxoffice.probe.>")
		if relay != nil {
			err = errors.Join(err, errors.New("a relay without NATS"))
		}
		got <- err
		return nil, nil
	})
	if err := <-got; err != nil {
		t.Errorf("RelayOutbox without NATS_URL = %v, want nil relay and no error", err)
	}
}

func TestOnCloseRunsAfterTheWorkersStopped(t *testing.T) {
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	_, stop := startMain(t, nil, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		s.OnClose(func() error { note("first registered, closed last"); return nil })
		s.OnClose(func() error { note("client closed"); return nil })
		s.Go("uses the client", func(ctx context.Context) error {
			<-ctx.Done()
			note("worker stopped")
			return nil
		})
		return nil, nil
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	want := []string{"worker stopped", "client closed", "first registered, closed last"}
	if !slices.Equal(order, want) {
		t.Errorf("shutdown order = %q, want %q", order, want)
	}
}

// A process whose NATS is away at start serves anyway, within natsconn.FirstConnectWait,
// and says so; once NATS comes, its outbox stream is created, the events committed
// meanwhile are relayed, and its control hook gets messages.
func TestStartWithNATSDownServesAndCatchesUp(t *testing.T) {
	port := testkit.FreePort(t)
	natsURL := "nats://127.0.0.1:" + strconv.Itoa(port)
	committed := make(chan struct{}, 1)
	var logs testkit.Buffer
	url, _ := startSpecTo(t, server.Spec{Name: "probe", HTTPAddr: ":0"}, map[string]string{"NATS_URL": natsURL},
		func(ctx context.Context, s *server.Server) (http.Handler, error) {
			relay, err := commitOneEvent(ctx, s)
			if err != nil {
				return nil, err
			}
			relay.Notify()
			committed <- struct{}{}
			return nil, nil
		}, io.MultiWriter(tlog{t}, &logs))
	<-committed
	if code, body := get(t, url+"/readyz"); code != http.StatusOK {
		t.Errorf("GET /readyz with NATS away = %d %s, want 200", code, body)
	}
	if l := logs.String(); !strings.Contains(l, `"level":"WARN","msg":"nats not reachable`) || !strings.Contains(l, natsURL) {
		t.Errorf("log with NATS away has no warning naming %s:\n%s", natsURL, l)
	}

	ns, err := natsconn.StartEmbedded(natsconn.EmbeddedOptions{StoreDir: t.TempDir(), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	js := testkit.JetStream(t, natsURL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var msg *jetstream.RawStreamMsg
	testkit.Eventually(t, 15*time.Second, "the event committed while NATS was away is on the PROBE stream", func() bool {
		stream, err := js.Stream(ctx, "PROBE")
		if err != nil {
			return false
		}
		msg, err = stream.GetMsg(ctx, 1)
		return err == nil
	})
	if msg.Header.Get(jetstream.MsgIDHeader) != "evt-1" {
		t.Errorf("stream message has Nats-Msg-Id %q, want evt-1", msg.Header.Get(jetstream.MsgIDHeader))
	}

	nc, err := natsconn.Connect(ctx, natsURL, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testkit.Eventually(t, 15*time.Second, "a control message over NATS is applied", func() bool {
		if control.Publish(ctx, nc, "probe", control.Knobs{MaxConcurrent: 7}) != nil {
			return false
		}
		_, body := get(t, url+"/control")
		return strings.Contains(body, `"max_concurrent":7`)
	})
}
