package deploy

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNetworkPolicies runs CheckNetworkPolicies on the real manifests (TestKustomize runs it
// too, through CheckManifests, with every other check).
func TestNetworkPolicies(t *testing.T) {
	w := loadWorkspace(t)
	for _, dir := range []string{"base", "overlays/local"} {
		t.Run(dir, func(t *testing.T) {
			objs, err := BuildKustomization(filepath.Join(w.Root, "deploy", "k8s", filepath.FromSlash(dir)))
			if err != nil {
				t.Fatalf("BuildKustomization = %v", err)
			}
			if err := CheckNetworkPolicies(w, objs); err != nil {
				t.Errorf("CheckNetworkPolicies(%s) = %v", dir, err)
			}
		})
	}
}

// TestNetworkPoliciesBroken builds the netpol-* kustomizations of deploy/testdata/k8s, each
// the local overlay with one permission missing or one too many: each must be reported,
// naming the component and the permission.
func TestNetworkPoliciesBroken(t *testing.T) {
	w := loadWorkspace(t)
	tests := []struct {
		fixture string
		want    []string
	}{
		{"netpol-no-bff-catalog-grpc", []string{
			"deployment/bff-web cannot reach port 9102 of deployment/catalog (CATALOG_GRPC_ADDR=catalog:9102): no NetworkPolicy admits it",
		}},
		{"netpol-catalog-open", []string{
			"deployment/catalog: port 8102 (http) admits deployment/auth, ",
			"deployment/bff-web, ",
			"any other pod of the namespace (NetworkPolicy catalog-open), though none of them connects to it",
		}},
		{"netpol-no-default-deny", []string{
			"namespace boxoffice has no default deny",
			"job/redis-cluster-init: no NetworkPolicy selects its pods",
		}},
		{"netpol-gateway-open", []string{
			"deployment/gateway: port 8080 (http) admits deployment/gateway, deployment/auth, ",
			"a pod of another namespace, a client outside the cluster (NetworkPolicy gateway)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			objs, err := BuildKustomization(filepath.Join(w.Root, "deploy", "testdata", "k8s", tt.fixture))
			if err != nil {
				t.Fatalf("BuildKustomization = %v", err)
			}
			err = CheckNetworkPolicies(w, objs)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("CheckNetworkPolicies(%s) = %v, want an error containing %q", tt.fixture, err, want)
				}
			}
		})
	}
}

// TestAdmitsPeer holds the matching of a rule's from: peers to the API's meaning.
func TestAdmitsPeer(t *testing.T) {
	gateway := peer{name: "gateway", namespace: "boxoffice",
		nsLabels: map[string]string{"kubernetes.io/metadata.name": "boxoffice"},
		labels:   map[string]string{"app.kubernetes.io/name": "gateway"}}
	gatewayElsewhere := gateway
	gatewayElsewhere.namespace, gatewayElsewhere.nsLabels = "other", map[string]string{"kubernetes.io/metadata.name": "other"}
	scraper := peer{name: "scraper", namespace: "monitoring",
		nsLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring", metricsNamespaceLabel: "true"}}
	outside := peer{name: "outside"}

	byName := &LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "gateway"}}
	in := &LabelSelector{}
	in.MatchExpressions = append(in.MatchExpressions, struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	}{"app.kubernetes.io/name", "In", []string{"order", "gateway"}})
	metricsNS := &LabelSelector{MatchLabels: map[string]string{metricsNamespaceLabel: "true"}}
	everything := &LabelSelector{}

	tests := []struct {
		name string
		from []NetworkPeer
		src  peer
		want bool
	}{
		{"no from admits a pod", nil, gateway, true},
		{"no from admits the outside", nil, outside, true},
		{"podSelector admits its pods", []NetworkPeer{{PodSelector: byName}}, gateway, true},
		{"matchExpressions In admits a listed name", []NetworkPeer{{PodSelector: in}}, gateway, true},
		{"podSelector alone is the policy's namespace only", []NetworkPeer{{PodSelector: byName}}, gatewayElsewhere, false},
		{"podSelector {} is every pod of the namespace", []NetworkPeer{{PodSelector: everything}}, gateway, true},
		{"podSelector {} is not another namespace", []NetworkPeer{{PodSelector: everything}}, scraper, false},
		{"namespaceSelector admits every pod there", []NetworkPeer{{NamespaceSelector: metricsNS}}, scraper, true},
		{"namespaceSelector refuses other namespaces", []NetworkPeer{{NamespaceSelector: metricsNS}}, gateway, false},
		{"namespaceSelector and podSelector need both", []NetworkPeer{{NamespaceSelector: everything, PodSelector: byName}}, scraper, false},
		{"namespaceSelector {} with podSelector: any namespace", []NetworkPeer{{NamespaceSelector: everything, PodSelector: byName}}, gatewayElsewhere, true},
		{"selectors never admit the outside", []NetworkPeer{{NamespaceSelector: everything}}, outside, false},
		{"an ipBlock counts as admitting pods too", []NetworkPeer{{IPBlock: &struct {
			CIDR string `yaml:"cidr"`
		}{"10.0.0.0/8"}}}, gateway, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := IngressRule{From: tt.from}
			if got := r.admitsPeer("boxoffice", tt.src); got != tt.want {
				t.Errorf("admitsPeer(%s) = %v, want %v", tt.src.name, got, tt.want)
			}
		})
	}
}
