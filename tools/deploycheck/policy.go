package deploycheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"boxoffice.dev/gateway/policy"
)

//go:generate go test -run TestKubernetesPolicy -update .

// kubernetesPolicyHeader heads the generated policy, so nobody edits it by hand.
const kubernetesPolicyHeader = `# Generated from gateway/policy.yaml by tools/deploycheck (KubernetesPolicy): do not edit;
# change gateway/policy.yaml, then run
#
#   go generate ./tools/deploycheck
#
# The same policy as the all-in-one mode's, except where the services are: each is found by
# the DNS name of its headless Service, which the gateway re-resolves every few seconds to the
# addresses of the ready pods, and balances over them per request.
`

// KubernetesPolicy returns the gateway's default policy (src, the text of
// gateway/policy.yaml) for Kubernetes: each service's instances, the all-in-one mode's
// loopback URLs, become dns: <service>:<HTTP port>, the deployable's headless Service.
// Routes, limits, plans and comments are kept as they are.
func KubernetesPolicy(src []byte, w *Workspace) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("policy: not a YAML mapping")
	}
	root := doc.Content[0]
	services := mappingValue(root, "services")
	if services == nil || services.Kind != yaml.SequenceNode {
		return nil, errors.New("policy: no services list")
	}
	for _, sv := range services.Content {
		name := mappingValue(sv, "name")
		if name == nil {
			return nil, fmt.Errorf("policy: line %d: a service without a name", sv.Line)
		}
		d, ok := w.Deployable(name.Value)
		if !ok {
			return nil, fmt.Errorf("policy: service %s is no deployable of the workspace", name.Value)
		}
		deleteMappingKey(sv, "instances")
		deleteMappingKey(sv, "dns")
		sv.Content = append(sv.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "dns"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprintf("%s:%d", d.Name, d.HTTPPort)})
	}
	// The source's own head comment describes the all-in-one mode; the header replaces it.
	doc.HeadComment, root.HeadComment = "", ""
	if len(root.Content) > 0 {
		root.Content[0].HeadComment = ""
	}
	var out bytes.Buffer
	out.WriteString(kubernetesPolicyHeader + "\n")
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return out.Bytes(), nil
}

// mappingValue returns the value of key in mapping node m, nil when absent.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func deleteMappingKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// DefaultPolicy is the policy the gateway embeds and runs without POLICY_FILE
// (gateway/policy.yaml).
func (w *Workspace) DefaultPolicy() (*policy.Policy, error) {
	return readPolicy(filepath.Join(w.Root, "gateway", "policy.yaml"))
}

func readPolicy(path string) (*policy.Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	pol, err := policy.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return pol, nil
}

// UpstreamEnv maps each UPSTREAM_<SERVICE> variable of the gateway's policy to why it must
// be set: "" when optional, a reason when the policy's instances of that service are on
// loopback (the all-in-one mode's ports), which in a container is the gateway itself.
func UpstreamEnv(pol *policy.Policy) map[string]string {
	out := map[string]string{}
	for _, sv := range pol.Services {
		why := ""
		if slices.ContainsFunc(sv.Instances, namesLoopback) {
			why = fmt.Sprintf("the policy's instances of %s %v are on loopback", sv.Name, sv.Instances)
		}
		out[UpstreamVar(sv.Name)] = why
	}
	return out
}

// UpstreamVar names the gateway's variable for a service's instances, as gateway/run.go
// reads it: UPSTREAM_BFF_MOBILE for bff-mobile.
func UpstreamVar(service string) string {
	return "UPSTREAM_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(service))
}
