package deploycheck

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"boxoffice.dev/gateway/policy"
)

var update = flag.Bool("update", false, "rewrite generated files (the Kubernetes policy) instead of comparing them")

// checkGenerated holds file to got, what its generator makes now; with -update (go generate
// ./tools/deploycheck) it writes got there first.
func checkGenerated(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate ./tools/deploycheck", file)
	}
}

// TestKubernetesPolicy keeps deploy/k8s/base/gateway-policy.yaml what KubernetesPolicy makes
// of gateway/policy.yaml: a route or limit changed in one is changed in the other.
func TestKubernetesPolicy(t *testing.T) {
	w := loadWorkspace(t)
	src, err := os.ReadFile(filepath.Join(w.Root, "gateway", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := KubernetesPolicy(src, w)
	if err != nil {
		t.Fatalf("KubernetesPolicy(gateway/policy.yaml) = %v", err)
	}
	checkGenerated(t, filepath.Join(w.Root, "deploy", "k8s", "base", "gateway-policy.yaml"), got)

	// What the gateway reads: the same routes and limits, every service by DNS.
	k8s, err := policy.Parse(got)
	if err != nil {
		t.Fatalf("policy.Parse(generated) = %v", err)
	}
	orig, err := policy.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(k8s.Routes) != len(orig.Routes) || len(k8s.Limits) != len(orig.Limits) || len(k8s.Services) != len(orig.Services) {
		t.Errorf("generated policy has %d routes, %d limits, %d services, want %d, %d, %d",
			len(k8s.Routes), len(k8s.Limits), len(k8s.Services), len(orig.Routes), len(orig.Limits), len(orig.Services))
	}
	for _, sv := range k8s.Services {
		d, _ := w.Deployable(sv.Name)
		if want := sv.Name + ":" + strconv.Itoa(d.HTTPPort); sv.DNS != want || len(sv.Instances) != 0 {
			t.Errorf("generated service %s: dns %q instances %v, want dns %q and no instances", sv.Name, sv.DNS, sv.Instances, want)
		}
	}
}
