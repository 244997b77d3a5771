package deploy

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

// TestKustomizeBroken builds the kustomizations of deploy/testdata/k8s, each the local overlay
// with one thing broken: each must be reported.
func TestKustomizeBroken(t *testing.T) {
	w := loadWorkspace(t)
	tests := []struct {
		fixture, want string
	}{
		{"no-readiness-probe", "deployment/inventory: container inventory has no readinessProbe"},
		{"no-liveness-probe", "statefulset/nats: container nats has no livenessProbe"},
		{"no-memory-limit", "deployment/order: container order has no resources.limits.memory"},
		{"no-deployment", "deployable search runs in no Deployment"},
		{"not-headless", "service/catalog is not headless"},
		{"no-autoscaler", "deployment/inventory has no HorizontalPodAutoscaler"},
		{"probe-wrong-path", "deployment/payment: readinessProbe asks /healthz, want /readyz"},
		{"missing-env", "deployment/order: PAYMENT_GRPC_ADDR is not set"},
		{"wrong-port", "deployment/search: CATALOG_GRPC_ADDR=catalog:8102: catalog listens on 9102, not 8102"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			objs, err := BuildKustomization(filepath.Join(w.Root, "deploy", "testdata", "k8s", tt.fixture))
			if err != nil {
				t.Fatalf("BuildKustomization = %v", err)
			}
			err = CheckManifests(w, objs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckManifests(%s) = %v, want an error containing %q", tt.fixture, err, tt.want)
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
