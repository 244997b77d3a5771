package deploycheck

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

//go:generate go test -run TestKubernetesAlerts -update .

// kubernetesAlertsHeader heads the Kubernetes copy of the alert rules, so nobody edits it.
const kubernetesAlertsHeader = `# Generated from deploy/prometheus/alerts.yml by tools/deploycheck (KubernetesAlerts): do not
# edit; change deploy/prometheus/alerts.yml, then run
#
#   go generate ./tools/deploycheck
#
# kustomize reads files only below its own directory, hence this copy; it becomes the
# ConfigMap prometheus-alerts (kustomization.yaml) for the cluster's Prometheus to load.

`

// KubernetesAlerts returns the alert rules file src (deploy/prometheus/alerts.yml) as the
// Kubernetes base ships it: the same rules under a header naming their source.
func KubernetesAlerts(src []byte) []byte {
	return append([]byte(kubernetesAlertsHeader), src...)
}

// Alert is one alerting rule of a Prometheus rules file.
type Alert struct {
	Group, Name, Expr string
}

// Alerts returns the alerting rules of a Prometheus rules file (recording rules are left out).
func Alerts(file string) ([]Alert, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	var rf struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &rf); err != nil {
		return nil, fmt.Errorf("alerts %s: %w", file, err)
	}
	var out []Alert
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, Alert{Group: g.Name, Name: r.Alert, Expr: r.Expr})
			}
		}
	}
	return out, nil
}
