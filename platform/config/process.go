package config

import "time"

// Process is the configuration every BoxOffice process shares. Each deployable loads it with
// LoadProcess and adds its own variables with the same Reader.
type Process struct {
	Name            string        // service name, e.g. "catalog"
	HTTPAddr        string        // HTTP_ADDR, REST + health + metrics; default per service
	GRPCAddr        string        // GRPC_ADDR; "" = no gRPC listener
	LogLevel        string        // LOG_LEVEL: debug, info, warn, error
	DataDir         string        // DATA_DIR: SQLite files, JetStream store; default ./.boxoffice
	DatabaseURL     string        // DATABASE_URL: postgres://…; "" = SQLite under DataDir
	RedisURL        string        // REDIS_URL: redis://… or redis+cluster://…; "" = resolve locally
	NATSURL         string        // NATS_URL: nats://…; "" = none (events and control fan-out off)
	OTLPEndpoint    string        // OTEL_EXPORTER_OTLP_ENDPOINT; "" = tracing off
	ShutdownTimeout time.Duration // SHUTDOWN_TIMEOUT: how long in-flight work may drain

	// NATSStreamReplicas is NATS_STREAM_REPLICAS, how many servers of a NATS cluster keep a
	// copy of each event stream, 1 to 5; default 1. 3 lets a stream outlive one server of a
	// three-node cluster; a server outside a cluster refuses more than 1.
	NATSStreamReplicas int
}

// LoadProcess reads the shared variables. httpAddr and grpcAddr are the service's default
// listen addresses.
func LoadProcess(r *Reader, name, httpAddr, grpcAddr string) Process {
	return Process{
		Name:            name,
		HTTPAddr:        r.Addr("HTTP_ADDR", httpAddr),
		GRPCAddr:        r.Addr("GRPC_ADDR", grpcAddr),
		LogLevel:        r.String("LOG_LEVEL", "info"),
		DataDir:         r.String("DATA_DIR", ".boxoffice"),
		DatabaseURL:     r.URL("DATABASE_URL", "", "postgres", "postgresql"),
		RedisURL:        r.URL("REDIS_URL", "", "redis", "rediss", "redis+cluster"),
		NATSURL:         r.URL("NATS_URL", "", "nats", "tls"),
		OTLPEndpoint:    r.String("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
		ShutdownTimeout: r.Duration("SHUTDOWN_TIMEOUT", 10*time.Second),

		NATSStreamReplicas: r.Int("NATS_STREAM_REPLICAS", 1, 1, 5),
	}
}
