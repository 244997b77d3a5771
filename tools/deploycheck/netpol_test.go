package deploycheck

import "testing"

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
