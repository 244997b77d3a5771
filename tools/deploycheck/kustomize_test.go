package deploycheck

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKustomize(t *testing.T) {
	w := loadWorkspace(t)
	for _, dir := range []string{"base", "overlays/local"} {
		t.Run(dir, func(t *testing.T) {
			objs, err := BuildKustomization(filepath.Join(w.Root, "deploy", "k8s", filepath.FromSlash(dir)))
			if err != nil {
				t.Fatalf("BuildKustomization = %v", err)
			}
			if err := CheckManifests(w, objs); err != nil {
				t.Errorf("CheckManifests(%s) = %v", dir, err)
			}
		})
	}
}

// TestKustomizeBroken builds the kustomizations of testdata/k8s, each the local overlay
// with one thing broken: each must be reported, naming the object and what is wrong.
func TestKustomizeBroken(t *testing.T) {
	w := loadWorkspace(t)
	tests := []struct {
		fixture string
		want    []string // each in the error
	}{
		{"no-readiness-probe", []string{"deployment/inventory: container inventory has no readinessProbe"}},
		{"no-liveness-probe", []string{"statefulset/nats: container nats has no livenessProbe"}},
		{"no-memory-limit", []string{"deployment/order: container order has no resources.limits.memory"}},
		{"no-deployment", []string{"deployable search runs in no Deployment"}},
		{"not-headless", []string{"service/catalog is not headless"}},
		{"no-autoscaler", []string{"deployment/inventory has no HorizontalPodAutoscaler"}},
		{"probe-wrong-path", []string{"deployment/payment: readinessProbe asks /healthz, want /readyz"}},
		{"pg-isready-socket", []string{`statefulset/postgres: container postgres: readinessProbe "pg_isready -U boxoffice -d postgres" asks PostgreSQL over its Unix socket`}},
		{"missing-env", []string{"deployment/order: PAYMENT_GRPC_ADDR is not set"}},
		{"wrong-port", []string{"deployment/search: CATALOG_GRPC_ADDR=catalog:8102: catalog listens on 9102, not 8102"}},
		// NetworkPolicies: a caller missing, one permission too many, no default deny.
		{"netpol-no-bff-catalog-grpc", []string{
			"deployment/bff-web cannot reach port 9102 of deployment/catalog (CATALOG_GRPC_ADDR=catalog:9102): no NetworkPolicy admits it",
		}},
		{"netpol-catalog-open", []string{
			"deployment/catalog: port 8102 (http): NetworkPolicy catalog-open admits deployment/auth, ",
			", deployment/bff-web, ",
			", any other pod of the namespace, none of which connects to it",
		}},
		{"netpol-no-default-deny", []string{
			"namespace boxoffice has no default deny",
			"job/redis-cluster-init: no NetworkPolicy selects its pods",
		}},
		{"netpol-gateway-open", []string{
			"deployment/gateway: port 8080 (http): NetworkPolicy gateway admits deployment/gateway, deployment/auth, ",
			", a pod of another namespace, a client outside the cluster, none of which connects to it",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			objs, err := BuildKustomization(filepath.Join(w.Root, "tools", "deploycheck", "testdata", "k8s", tt.fixture))
			if err != nil {
				t.Fatalf("BuildKustomization = %v", err)
			}
			err = CheckManifests(w, objs)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("CheckManifests(%s) = %v, want an error containing %q", tt.fixture, err, want)
				}
			}
		})
	}
}

// TestLocalDatabases keeps the local overlay's PostgreSQL in step with compose's: the same
// init script, creating the same databases (CheckCompose ties those to the services).
func TestLocalDatabases(t *testing.T) {
	w := loadWorkspace(t)
	compose, err := os.ReadFile(filepath.Join(w.Root, "deploy", "compose", "postgres-init.sh"))
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(filepath.Join(w.Root, "deploy", "k8s", "overlays", "local", "postgres-init.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(compose, local) {
		t.Errorf("deploy/k8s/overlays/local/postgres-init.sh differs from deploy/compose/postgres-init.sh: copy one onto the other")
	}

	p, err := LoadCompose(context.Background(), w.Root, "docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := *p.Services["postgres"].Environment["BOXOFFICE_DATABASES"]
	objs, err := BuildKustomization(filepath.Join(w.Root, "deploy", "k8s", "overlays", "local"))
	if err != nil {
		t.Fatal(err)
	}
	pg, ok := build(objs).find("StatefulSet", "postgres")
	if !ok || len(pg.Spec.Template.Spec.Containers) == 0 {
		t.Fatal("the local overlay has no StatefulSet postgres")
	}
	got := ""
	for _, e := range pg.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "BOXOFFICE_DATABASES" {
			got = e.Value
		}
	}
	if got != want {
		t.Errorf("local overlay BOXOFFICE_DATABASES = %q, want compose's %q", got, want)
	}
}
