package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
)

// A worker that ignores its context is waited for once: the process still closes what it
// opened and returns within SHUTDOWN_TIMEOUT, the time an orchestrator's grace period was
// sized for, not twice that.
func TestShutdownWithStuckWorkerEndsWithinTheTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	release := make(chan struct{})
	defer close(release)
	closed := make(chan time.Time, 1)
	_, stop := startMain(t, map[string]string{"SHUTDOWN_TIMEOUT": timeout.String()}, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		s.OnClose(func() error { closed <- time.Now(); return nil })
		s.Go("stuck", func(context.Context) error {
			<-release // ignores its context
			return nil
		})
		return nil, nil
	})
	start := time.Now()
	err := stop()
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "[stuck]") {
		t.Errorf("Main with a stuck worker = %v, want an error naming it", err)
	}
	if took > timeout {
		t.Errorf("Main returned %v after cancel, want within SHUTDOWN_TIMEOUT=%v", took, timeout)
	}
	select {
	case at := <-closed:
		if d := at.Sub(start); d > timeout {
			t.Errorf("OnClose ran %v after cancel, want within SHUTDOWN_TIMEOUT=%v", d, timeout)
		}
	default:
		t.Error("Main returned without running OnClose")
	}
}

// Close waits for the NATS drain, which nats.Conn.Drain only starts, so what the process
// published last leaves before it exits; and gives up at the shutdown deadline when a
// handler holds the drain up.
func TestCloseWaitsForTheNATSDrainWithinTheTimeout(t *testing.T) {
	const timeout = time.Second
	tests := []struct {
		name        string
		stuck       bool // a subscription's handler never returns
		wantErr     string
		within, min time.Duration
	}{
		{name: "drain completes", within: timeout},
		{name: "handler holds the drain", stuck: true, wantErr: "nats drain", within: timeout + 250*time.Millisecond, min: timeout / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := testkit.StartNATS(t)
			cfg := config.Process{Name: "probe", LogLevel: "error", NATSURL: ns.ClientURL(), ShutdownTimeout: timeout}
			s, err := server.New(context.Background(), cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if tt.stuck {
				entered := make(chan struct{})
				release := make(chan struct{})
				defer close(release)
				if _, err := s.NATS.Subscribe("probe.stuck", func(*nats.Msg) { close(entered); <-release }); err != nil {
					t.Fatal(err)
				}
				if err := s.NATS.Publish("probe.stuck", nil); err != nil {
					t.Fatal(err)
				}
				<-entered
			}
			start := time.Now()
			err = s.Close()
			took := time.Since(start)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Close() = %v, want error containing %q", err, tt.wantErr)
			}
			if !s.NATS.IsClosed() {
				t.Error("NATS connection still open after Close returned, want the drain finished or cut")
			}
			if took > tt.within || took < tt.min {
				t.Errorf("Close() took %v, want between %v and %v", took, tt.min, tt.within)
			}
		})
	}
}
