package deploycheck

import (
	"slices"
	"sync"
	"testing"
)

// repoRoot is the workspace the deployment files describe, from this package's directory.
const repoRoot = "../.."

var (
	workspaceOnce sync.Once
	workspace     *Workspace
	workspaceErr  error
)

// loadWorkspace reads the workspace once per test binary: `go list` over every deployable
// takes a second or two.
func loadWorkspace(t *testing.T) *Workspace {
	t.Helper()
	workspaceOnce.Do(func() { workspace, workspaceErr = LoadWorkspace(repoRoot) })
	if workspaceErr != nil {
		t.Fatalf("LoadWorkspace(%q) = %v", repoRoot, workspaceErr)
	}
	return workspace
}

// TestLoadWorkspace holds the discovery to facts of the tree that a reader can check by
// opening the files named.
func TestLoadWorkspace(t *testing.T) {
	w := loadWorkspace(t)
	tests := []struct {
		name      string
		module    string
		main      string
		http      int
		grpc      int
		db, redis bool
		edge      bool
		reads     string // a variable it reads
		def       string // and that variable's literal default
	}{
		{name: "gateway", module: "gateway", main: "./gateway/cmd/gateway", http: 8080, db: true, redis: true, edge: true, reads: "AUTH_URL", def: "http://127.0.0.1:8101"},
		{name: "order", module: "services/order", main: "./services/order/cmd/order", http: 8106, grpc: 9106, db: true, reads: "PAYMENT_GRPC_ADDR", def: "127.0.0.1:9107"},
		{name: "waitroom", module: "services/waitroom", main: "./services/waitroom/cmd/waitroom", http: 8105, grpc: 9105, redis: true, reads: "WAITROOM_SIGNING_KEY"},
		{name: "bff-web", module: "bff-web", main: "./bff-web/cmd/bff-web", http: 8112, reads: "NATS_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := w.Deployable(tt.name)
			if !ok {
				t.Fatalf("Deployable(%q) not found among %v", tt.name, names(w))
			}
			if d.Module != tt.module || d.Main != tt.main || d.HTTPPort != tt.http || d.GRPCPort != tt.grpc {
				t.Errorf("Deployable(%q) = %s %s http %d grpc %d, want %s %s http %d grpc %d", tt.name, d.Module, d.Main, d.HTTPPort, d.GRPCPort, tt.module, tt.main, tt.http, tt.grpc)
			}
			if d.Edge != tt.edge {
				t.Errorf("Deployable(%q).Edge = %v, want %v", tt.name, d.Edge, tt.edge)
			}
			if d.UsesDB != tt.db || d.UsesRedis != tt.redis {
				t.Errorf("Deployable(%q) uses db %v redis %v, want %v %v", tt.name, d.UsesDB, d.UsesRedis, tt.db, tt.redis)
			}
			i := slices.IndexFunc(d.Env, func(v EnvVar) bool { return v.Name == tt.reads })
			if i < 0 {
				t.Fatalf("Deployable(%q) does not read %s", tt.name, tt.reads)
			}
			if got := d.Env[i].Default; got != tt.def {
				t.Errorf("Deployable(%q) reads %s with default %q, want %q", tt.name, tt.reads, got, tt.def)
			}
		})
	}
	if _, ok := w.Deployable("boxoffice"); ok {
		t.Errorf("Deployable(boxoffice) found: the all-in-one CLI ships in no image")
	}
	if len(w.Deployables) < 13 {
		t.Errorf("LoadWorkspace found %d deployables (%v), want at least the 13 of the design", len(w.Deployables), names(w))
	}
}

func TestRequiredEnv(t *testing.T) {
	w := loadWorkspace(t)
	tests := []struct {
		deployable string
		want       []string
		notWanted  []string
	}{
		{deployable: "order", want: []string{"NATS_URL", "OTEL_EXPORTER_OTLP_ENDPOINT", "DATABASE_URL", "PAYMENT_GRPC_ADDR", "INVENTORY_GRPC_ADDR", "CATALOG_GRPC_ADDR"}, notWanted: []string{"REDIS_URL", "ORDER_WORKERS"}},
		{deployable: "waitroom", want: []string{"REDIS_URL", "WAITROOM_SIGNING_KEY"}, notWanted: []string{"DATABASE_URL"}},
		{deployable: "gateway", want: []string{"DATABASE_URL", "REDIS_URL", "ADMIN_TOKEN", "ADMIN_ADDR", "AUTH_URL", "AUTH_GRPC_ADDR"}, notWanted: []string{"AUTH_ISSUER", "TRUSTED_PROXIES"}},
		{deployable: "bff-mobile", want: []string{"NATS_URL"}, notWanted: []string{"DATABASE_URL", "REDIS_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.deployable, func(t *testing.T) {
			d, _ := w.Deployable(tt.deployable)
			got := RequiredEnv(d)
			for _, name := range tt.want {
				if _, ok := got[name]; !ok {
					t.Errorf("RequiredEnv(%s) lacks %s: %v", tt.deployable, name, got)
				}
			}
			for _, name := range tt.notWanted {
				if _, ok := got[name]; ok {
					t.Errorf("RequiredEnv(%s) has %s (%s), want it optional", tt.deployable, name, got[name])
				}
			}
		})
	}
}

func names(w *Workspace) []string {
	var out []string
	for _, d := range w.Deployables {
		out = append(out, d.Name)
	}
	return out
}
