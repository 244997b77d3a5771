package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configures an in-process nats-server.
type EmbeddedOptions struct {
	// StoreDir holds the JetStream files. Required: a stream outlives a restart only if
	// its directory does.
	StoreDir string
	// Host is the listen address; "" means 127.0.0.1, so the all-in-one mode is not
	// reachable from other machines.
	Host string
	// Port is the client port: -1 picks a free port, 0 means the NATS default 4222.
	Port int
	// Name is the server name shown to clients; "" means "boxoffice".
	Name string
	// Log receives the server's own log lines; nil keeps the server silent.
	Log *slog.Logger
	// ReadyTimeout bounds the wait for the server to accept connections; 0 means 10s.
	ReadyTimeout time.Duration
}

// Embedded is the real nats-server running inside this process with JetStream enabled.
// Its methods are safe for concurrent use.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a nats-server in-process with JetStream and returns once it accepts
// client connections. The caller stops it with Shutdown.
func StartEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	if opts.StoreDir == "" {
		return nil, errors.New("nats embedded: store dir is required")
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Name == "" {
		opts.Name = "boxoffice"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: opts.Name,
		Host:       opts.Host,
		Port:       opts.Port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		NoSigs:     true, // the host process owns signal handling and shutdown order
		NoLog:      opts.Log == nil,
		// The ASCII banner is noise in a process that also runs a dozen services.
		DisableJetStreamBanner: true,
	})
	if err != nil {
		return nil, fmt.Errorf("nats embedded: %w", err)
	}
	if opts.Log != nil {
		srv.SetLogger(serverLog{opts.Log.With("component", "nats-server")}, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(opts.ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("nats embedded: not ready for connections within %v", opts.ReadyTimeout)
	}
	return &Embedded{srv: srv}, nil
}

// ClientURL is the nats:// URL clients connect to.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// Shutdown stops the server and waits until it has stopped. Safe to call twice.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// serverLog adapts slog to nats-server's logger. Fatal is logged as an error: the server
// decides itself whether to stop, and this process must not exit on its behalf.
type serverLog struct{ log *slog.Logger }

var _ server.Logger = serverLog{}

func (l serverLog) Noticef(format string, v ...any) { l.emit(slog.LevelInfo, format, v) }
func (l serverLog) Warnf(format string, v ...any)   { l.emit(slog.LevelWarn, format, v) }
func (l serverLog) Fatalf(format string, v ...any)  { l.emit(slog.LevelError, format, v) }
func (l serverLog) Errorf(format string, v ...any)  { l.emit(slog.LevelError, format, v) }
func (l serverLog) Debugf(format string, v ...any)  { l.emit(slog.LevelDebug, format, v) }
func (l serverLog) Tracef(format string, v ...any)  { l.emit(slog.LevelDebug, format, v) }

func (l serverLog) emit(level slog.Level, format string, v []any) {
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...))
}
