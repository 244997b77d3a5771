package deploycheck

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"boxoffice.dev/gateway/policy"
)

// Object is one Kubernetes object of a kustomize build, with the fields the checks read.
type Object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		// Deployment, StatefulSet, Job
		Replicas    *int   `yaml:"replicas"`
		ServiceName string `yaml:"serviceName"` // StatefulSet: its governing (headless) Service
		Template    struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				Containers []Container `yaml:"containers"`
				Volumes    []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
		// Service
		ClusterIP                string         `yaml:"clusterIP"`
		PublishNotReadyAddresses bool           `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]any `yaml:"selector"` // a Service's labels; a workload's {matchLabels: …}
		Ports                    []ServicePort  `yaml:"ports"`
		// HorizontalPodAutoscaler
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas *int `yaml:"minReplicas"`
		// NetworkPolicy
		PodSelector *LabelSelector `yaml:"podSelector"`
		PolicyTypes []string       `yaml:"policyTypes"`
		Ingress     []IngressRule  `yaml:"ingress"`
		// HTTPRoute
		ParentRefs []struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"parentRefs"`
		Rules []struct {
			BackendRefs []struct {
				Name string `yaml:"name"`
				Port int    `yaml:"port"`
			} `yaml:"backendRefs"`
		} `yaml:"rules"`
	} `yaml:"spec"`
	Data map[string]string `yaml:"data"` // ConfigMap; a Secret's, base64-encoded
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort port   `yaml:"targetPort"`
}

// Container is a pod's container, as the checks read it.
type Container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string    `yaml:"name"`
		Value     string    `yaml:"value"`
		ValueFrom *struct { // a fieldRef, resourceFieldRef or other is set but not read
			ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
			SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	ReadinessProbe *Probe `yaml:"readinessProbe"`
	LivenessProbe  *Probe `yaml:"livenessProbe"`
	StartupProbe   *Probe `yaml:"startupProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// Probe is a container probe; exactly one of its handlers is set.
type Probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port port   `yaml:"port"`
	} `yaml:"httpGet"`
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
	TCPSocket *yaml.Node `yaml:"tcpSocket"`
	GRPC      *yaml.Node `yaml:"grpc"`
}

// port is a port number or name (Kubernetes' IntOrString), kept as written.
type port string

func (p *port) UnmarshalYAML(n *yaml.Node) error {
	*p = port(n.Value)
	return nil
}

// BuildKustomization runs kustomize (its Go API, as `kubectl kustomize` does) on the
// kustomization directory dir, with kustomize's default rule that files come from inside it.
func BuildKustomization(dir string) ([]Object, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []Object
	for _, r := range res.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		var o Object
		if err := yaml.Unmarshal(y, &o); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s %s: %w", dir, r.GetKind(), r.GetName(), err)
		}
		out = append(out, o)
	}
	return out, nil
}

// build is a kustomize build indexed for the checks.
type build []Object

func (b build) find(kind, name string) (Object, bool) {
	i := slices.IndexFunc(b, func(o Object) bool { return o.Kind == kind && o.Metadata.Name == name })
	if i < 0 {
		return Object{}, false
	}
	return b[i], true
}

// deployment returns the Deployment running deployable d (a container of image
// [registry/]boxoffice/<d.Name>[:tag]) and that container.
func (b build) deployment(d Deployable) (Object, Container, bool) {
	for _, o := range b {
		if o.Kind != "Deployment" {
			continue
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			if imageRepo(c.Image) == "boxoffice/"+d.Name {
				return o, c, true
			}
		}
	}
	return Object{}, Container{}, false
}

// ref names an object as kubectl does: deployment/inventory.
func ref(o Object) string { return strings.ToLower(o.Kind) + "/" + o.Metadata.Name }

// imageRepo returns an image reference without its registry host and tag: boxoffice/gateway
// for registry.example.com/boxoffice/gateway:1.2.
func imageRepo(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	parts := strings.Split(image, "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/")
}

// CheckManifests checks a kustomize build against the workspace: every deployable runs in a
// Deployment whose probes ask its /readyz (readiness) and /healthz (liveness) on its HTTP
// port; every container of every Deployment and StatefulSet has both probes, CPU and memory
// requests and a memory limit (no CPU limit: throttling shows as latency, which is the thing
// the gateway must not add); every service the gateway's policy finds by DNS has a headless
// Service; the gateway and inventory have a HorizontalPodAutoscaler; each deployable's
// container sets what RequiredEnv asks and nothing its code does not read; and the
// NetworkPolicies admit exactly the connections the components make (CheckNetworkPolicies).
func CheckManifests(w *Workspace, objs []Object) error {
	b := build(objs)
	var errs []error
	for _, o := range b {
		errs = append(errs, checkWorkload(o)...)
	}
	for _, d := range w.Deployables {
		dep, c, ok := b.deployment(d)
		if !ok {
			errs = append(errs, fmt.Errorf("deployable %s runs in no Deployment (no container of image boxoffice/%s)", d.Name, d.Name))
			continue
		}
		errs = append(errs, checkDeployableProbes(d, dep, c)...)
		errs = append(errs, checkManifestEnv(w, b, d, dep, c)...)
	}
	errs = append(errs, checkHeadless(w, b)...)
	for _, name := range []string{"gateway", "inventory"} {
		errs = append(errs, checkAutoscaled(b, name)...)
	}
	if err := CheckNetworkPolicies(w, objs); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkWorkload: a long-running workload's containers have readiness and liveness probes
// (pg_isready's over TCP); all containers, a Job's too, have CPU and memory requests and a
// memory limit.
func checkWorkload(o Object) []error {
	if o.Kind != "Deployment" && o.Kind != "StatefulSet" && o.Kind != "Job" {
		return nil
	}
	var errs []error
	for _, c := range o.Spec.Template.Spec.Containers {
		at := fmt.Sprintf("%s: container %s", ref(o), c.Name)
		if o.Kind != "Job" {
			if !c.ReadinessProbe.set() {
				errs = append(errs, fmt.Errorf("%s has no readinessProbe", at))
			}
			if !c.LivenessProbe.set() {
				errs = append(errs, fmt.Errorf("%s has no livenessProbe", at))
			}
		}
		for _, p := range []struct {
			kind  string
			probe *Probe
		}{{"startupProbe", c.StartupProbe}, {"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}} {
			if err := pgIsReadyOverTCP(p.probe.command()); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s %w", at, p.kind, err))
			}
		}
		for _, r := range []struct{ kind, name string }{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "memory"}} {
			m := c.Resources.Requests
			if r.kind == "limits" {
				m = c.Resources.Limits
			}
			if m[r.name] == "" {
				errs = append(errs, fmt.Errorf("%s has no resources.%s.%s", at, r.kind, r.name))
			}
		}
	}
	return errs
}

func (p *Probe) set() bool {
	return p != nil && (p.HTTPGet != nil || p.Exec != nil || p.TCPSocket != nil || p.GRPC != nil)
}

// command is an exec probe's command; nil for a probe of another kind.
func (p *Probe) command() []string {
	if p == nil || p.Exec == nil {
		return nil
	}
	return p.Exec.Command
}

// checkDeployableProbes: readiness asks /readyz and liveness /healthz, on the HTTP port.
func checkDeployableProbes(d Deployable, dep Object, c Container) []error {
	var errs []error
	for _, p := range []struct {
		kind, path string
		probe      *Probe
	}{{"readinessProbe", "/readyz", c.ReadinessProbe}, {"livenessProbe", "/healthz", c.LivenessProbe}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			continue // reported by checkWorkload when missing
		}
		g := p.probe.HTTPGet
		if g.Path != p.path {
			errs = append(errs, fmt.Errorf("%s: %s asks %s, want %s", ref(dep), p.kind, g.Path, p.path))
		}
		if n := containerPort(c, g.Port); n != d.HTTPPort {
			errs = append(errs, fmt.Errorf("%s: %s asks port %s (%d), want %s's HTTP port %d", ref(dep), p.kind, g.Port, n, d.Name, d.HTTPPort))
		}
	}
	return errs
}

// containerPort resolves a port name or number of container c; 0 when it names none.
func containerPort(c Container, p port) int {
	for _, cp := range c.Ports {
		if cp.Name == string(p) || fmt.Sprint(cp.ContainerPort) == string(p) {
			return cp.ContainerPort
		}
	}
	var n int
	fmt.Sscanf(string(p), "%d", &n)
	return n
}

// checkAutoscaled: a HorizontalPodAutoscaler scales the named Deployment, from two replicas up.
func checkAutoscaled(b build, name string) []error {
	for _, o := range b {
		if o.Kind == "HorizontalPodAutoscaler" && o.Spec.ScaleTargetRef.Kind == "Deployment" && o.Spec.ScaleTargetRef.Name == name {
			if o.Spec.MinReplicas == nil || *o.Spec.MinReplicas < 2 {
				return []error{fmt.Errorf("%s: minReplicas below 2: one pod is no redundancy", ref(o))}
			}
			return nil
		}
	}
	return []error{fmt.Errorf("deployment/%s has no HorizontalPodAutoscaler", name)}
}

// checkHeadless: every dns: entry of the gateway's policy names a headless Service that
// selects the pods of that deployable and serves its HTTP port, so DNS answers with pod
// addresses and the gateway balances per request rather than per connection.
func checkHeadless(w *Workspace, b build) []error {
	d, ok := w.Deployable("gateway")
	if !ok {
		return nil
	}
	dep, c, ok := b.deployment(d)
	if !ok {
		return nil
	}
	pol, err := manifestPolicy(b, dep, c)
	if err != nil || pol == nil {
		return nil // reported by checkManifestEnv
	}
	var errs []error
	for _, sv := range pol.Services {
		if sv.DNS == "" {
			continue
		}
		host, p, _ := net.SplitHostPort(sv.DNS)
		svc, ok := b.find("Service", host)
		if !ok {
			errs = append(errs, fmt.Errorf("gateway policy: service %s is found at %s, but there is no Service %s", sv.Name, sv.DNS, host))
			continue
		}
		if svc.Spec.ClusterIP != "None" {
			errs = append(errs, fmt.Errorf("service/%s is not headless (clusterIP: None): the gateway would balance per connection over one virtual IP", host))
		}
		target, ok := w.Deployable(sv.Name)
		tdep, _, found := b.deployment(target)
		if !ok || !found || !selects(svc.Spec.Selector, tdep.Spec.Template.Metadata.Labels) {
			errs = append(errs, fmt.Errorf("service/%s does not select the pods of %s", host, sv.Name))
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(sp ServicePort) bool { return fmt.Sprint(sp.Port) == p }) {
			errs = append(errs, fmt.Errorf("service/%s has no port %s (gateway policy dns %s)", host, p, sv.DNS))
		}
	}
	return errs
}

// selects reports whether a Service selector matches pods with these labels.
func selects(selector map[string]any, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if s, ok := v.(string); !ok || labels[k] != s {
			return false
		}
	}
	return true
}

// checkManifestEnv applies RequiredEnv, and the gateway's UPSTREAM rule against the policy
// the container mounts, to a deployable's container: a variable is set by env (a value or a
// reference) or by an envFrom ConfigMap or Secret of the build (a Secret's keys count when
// the build has it, and cannot be checked when it does not: the base leaves Secrets to the
// cluster).
func checkManifestEnv(w *Workspace, b build, d Deployable, dep Object, c Container) []error {
	set := b.containerEnv(c)
	at := ref(dep)
	required := RequiredEnv(d)
	var upstreams map[string]string
	var errs []error
	if d.Name == "gateway" {
		pol, err := manifestPolicy(b, dep, c)
		if err != nil {
			return []error{fmt.Errorf("%s: %w", at, err)}
		}
		if pol == nil {
			if pol, err = w.DefaultPolicy(); err != nil {
				return []error{err}
			}
		}
		upstreams = UpstreamEnv(pol)
		for name, why := range upstreams {
			if why != "" {
				required[name] = why
			}
		}
	}
	for _, name := range sortedKeys(required) {
		if set[name] == "" {
			errs = append(errs, fmt.Errorf("%s: %s is not set: %s", at, name, required[name]))
		}
	}
	for _, e := range c.Env {
		if !knownEnv(d, e.Name, upstreams) {
			errs = append(errs, fmt.Errorf("%s: sets %s, which %s does not read", at, e.Name, d.Name))
		}
	}
	return append(errs, checkManifestAddresses(w, b, at, set)...)
}

// checkManifestAddresses: a variable that names a deployable (AUTH_URL, CATALOG_GRPC_ADDR,
// UPSTREAM_SEARCH) points at a Service of the build that selects that deployable's pods and
// serves the port it names (HTTP for URLs, gRPC for _GRPC_ADDR). Other addresses (a
// collector, a database) may be outside the build and are not checked.
func checkManifestAddresses(w *Workspace, b build, at string, set map[string]string) []error {
	var errs []error
	for _, name := range sortedKeys(set) {
		target, grpc := addressedDeployable(w, name)
		if target == "" {
			continue
		}
		d, _ := w.Deployable(target)
		want := d.HTTPPort
		if grpc {
			want = d.GRPCPort
		}
		tdep, _, found := b.deployment(d)
		for _, hp := range hostPorts(set[name]) {
			host, p, _ := net.SplitHostPort(hp)
			svcName, _, _ := strings.Cut(host, ".") // catalog, or catalog.boxoffice.svc…
			svc, ok := b.find("Service", svcName)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: %s=%s names %s, which is no Service of the build", at, name, set[name], host))
			case !found || !selects(svc.Spec.Selector, tdep.Spec.Template.Metadata.Labels):
				errs = append(errs, fmt.Errorf("%s: %s=%s names Service %s, which does not select the pods of %s", at, name, set[name], svcName, target))
			case !slices.ContainsFunc(svc.Spec.Ports, func(sp ServicePort) bool { return fmt.Sprint(sp.Port) == p }):
				errs = append(errs, fmt.Errorf("%s: %s=%s: Service %s has no port %s", at, name, set[name], svcName, p))
			case p != fmt.Sprint(want):
				errs = append(errs, fmt.Errorf("%s: %s=%s: %s listens on %d, not %s", at, name, set[name], target, want, p))
			}
		}
	}
	return errs
}

// unknownValue stands for a variable set by a reference the build cannot follow: a field of
// the pod, or a key of a Secret the cluster provides. It is set, and names no address.
const unknownValue = "(reference)"

// containerEnv returns the variables container c sets, by envFrom and env (which wins), with
// their values where the build holds them: literals, and keys of its ConfigMaps and Secrets.
func (b build) containerEnv(c Container) map[string]string {
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		var data map[string]string
		switch {
		case ef.ConfigMapRef != nil:
			data = b.keys("ConfigMap", ef.ConfigMapRef.Name)
		case ef.SecretRef != nil:
			data = b.keys("Secret", ef.SecretRef.Name)
		}
		maps.Copy(env, data)
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom == nil {
			continue
		}
		env[e.Name] = unknownValue
		var v string
		var ok bool
		switch r := e.ValueFrom; {
		case r.ConfigMapKeyRef != nil:
			v, ok = b.keys("ConfigMap", r.ConfigMapKeyRef.Name)[r.ConfigMapKeyRef.Key]
		case r.SecretKeyRef != nil:
			v, ok = b.keys("Secret", r.SecretKeyRef.Name)[r.SecretKeyRef.Key]
		}
		if ok {
			env[e.Name] = v
		}
	}
	return env
}

// keyRef names a key of a ConfigMap or Secret (an env valueFrom).
type keyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

// keys returns the data of the ConfigMap or Secret called name (a Secret's decoded from
// base64); nil when the build has no such object.
func (b build) keys(kind, name string) map[string]string {
	o, ok := b.find(kind, name)
	if !ok || kind != "Secret" {
		return o.Data
	}
	out := make(map[string]string, len(o.Data))
	for k, v := range o.Data {
		if dec, err := base64.StdEncoding.DecodeString(v); err == nil {
			out[k] = string(dec)
		}
	}
	return out
}

// manifestPolicy returns the policy a gateway container runs with: the file POLICY_FILE names,
// from the ConfigMap mounted at its directory; nil (and no error) without POLICY_FILE.
func manifestPolicy(b build, dep Object, c Container) (*policy.Policy, error) {
	file := ""
	for _, e := range c.Env {
		if e.Name == "POLICY_FILE" {
			file = e.Value
		}
	}
	if file == "" {
		return nil, nil
	}
	dir, key := path.Split(file)
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm, ok := b.find("ConfigMap", v.ConfigMap.Name)
			if !ok {
				return nil, fmt.Errorf("POLICY_FILE=%s: no ConfigMap %s in the build", file, v.ConfigMap.Name)
			}
			data, ok := cm.Data[key]
			if !ok {
				return nil, fmt.Errorf("POLICY_FILE=%s: ConfigMap %s has no key %s", file, cm.Metadata.Name, key)
			}
			pol, err := policy.Parse([]byte(data))
			if err != nil {
				return nil, fmt.Errorf("POLICY_FILE=%s: %w", file, err)
			}
			return pol, nil
		}
	}
	return nil, fmt.Errorf("POLICY_FILE=%s is not in a ConfigMap the container mounts", file)
}
