package deploycheck

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The peers outside the build that the policies must name, as k8s/base/network.yaml names
// them. A change to either is a change to both.
const (
	// metricsNamespaceLabel marks the namespace whose pods scrape the pods' metrics
	// (Prometheus): its value must be "true".
	metricsNamespaceLabel = "boxoffice.dev/metrics"
	// edgeNamespace is where Envoy Gateway, the class edge.yaml names, runs a Gateway's
	// proxies in its default mode; their pods carry edgeGatewayLabel and
	// edgeGatewayNamespaceLabel.
	edgeNamespace             = "envoy-gateway-system"
	edgeGatewayLabel          = "gateway.envoyproxy.io/owning-gateway-name"
	edgeGatewayNamespaceLabel = "gateway.envoyproxy.io/owning-gateway-namespace"
)

// LabelSelector is a Kubernetes label selector; the zero value selects everything.
type LabelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	} `yaml:"matchExpressions"`
}

// IngressRule is one rule of a NetworkPolicy: traffic from any of From (every source when
// empty) to any of Ports (every port when empty) is admitted.
type IngressRule struct {
	From  []NetworkPeer       `yaml:"from"`
	Ports []NetworkPolicyPort `yaml:"ports"`
}

// NetworkPeer is one source of an IngressRule. PodSelector alone means pods of the
// policy's namespace; with NamespaceSelector, pods of the namespaces it selects.
type NetworkPeer struct {
	PodSelector       *LabelSelector `yaml:"podSelector"`
	NamespaceSelector *LabelSelector `yaml:"namespaceSelector"`
	IPBlock           *struct {
		CIDR string `yaml:"cidr"`
	} `yaml:"ipBlock"`
}

// NetworkPolicyPort is one port of an IngressRule: a container port's number or name (every
// port when Port is empty), up to EndPort for a range.
type NetworkPolicyPort struct {
	Protocol string `yaml:"protocol"` // "" is TCP
	Port     port   `yaml:"port"`
	EndPort  int    `yaml:"endPort"`
}

// CheckNetworkPolicies checks the ingress NetworkPolicies of a kustomize build against the
// connections its components are configured to make, both ways:
//
//   - the namespace has a default deny (a policy selecting every pod and admitting nothing),
//     and every pod of the build is selected by some policy;
//   - every connection is admitted: each address a container's environment or command names
//     (AUTH_URL, CATALOG_GRPC_ADDR, NATS_URL, a DATABASE_URL of a Secret of the build…) that
//     is a Service of the namespace, each dns: entry of the gateway's policy, each backend of
//     an HTTPRoute (from the edge's proxies), each pod's prometheus.io/port (from the metrics
//     scraper), and each port of a clustered StatefulSet's Service (one that publishes
//     not-ready pods) between its own pods;
//   - nothing else is: every port of every pod admits no peer that does not connect to it,
//     among the build's workloads and the stand-ins for the edge, the scraper, any other pod of
//     the namespace, a pod of another namespace and a client outside the cluster.
//
// Addresses outside the namespace (a managed database, the base's OTLP collector) are left
// alone: the policies restrict ingress only. An ipBlock is counted as admitting every peer,
// since whether it matches pod addresses depends on the cluster.
func CheckNetworkPolicies(w *Workspace, objs []Object) error {
	b := build(objs)
	ns := b.namespace()
	var policies []Object
	for _, o := range b {
		if o.Kind == "NetworkPolicy" && o.Metadata.Namespace == ns && o.isIngressPolicy() {
			policies = append(policies, o)
		}
	}
	var errs []error
	if !slices.ContainsFunc(policies, func(p Object) bool {
		return (p.Spec.PodSelector == nil || p.Spec.PodSelector.empty()) && len(p.Spec.Ingress) == 0
	}) {
		errs = append(errs, fmt.Errorf("namespace %s has no default deny: no NetworkPolicy selects every pod (podSelector: {}) and admits nothing, so a pod added later accepts traffic from anywhere", ns))
	}
	peers := b.peers(ns)
	need := b.connections(w, ns)

	for _, t := range b.workloads() {
		labels := t.Spec.Template.Metadata.Labels
		var selecting []Object
		for _, p := range policies {
			if p.Spec.PodSelector == nil || p.Spec.PodSelector.matches(labels) {
				selecting = append(selecting, p)
			}
		}
		if len(selecting) == 0 {
			errs = append(errs, fmt.Errorf("%s: no NetworkPolicy selects its pods: they accept traffic from anywhere", ref(t)))
			continue
		}
		for _, cp := range podPorts(t) {
			extra := map[string][]string{} // policy → peers it admits that do not connect
			var order []string
			for _, src := range peers {
				by := admittedBy(selecting, ns, src, cp)
				why, needed := need[connection{src.name, ref(t), cp.number}]
				switch {
				case needed && by == "":
					errs = append(errs, fmt.Errorf("%s cannot reach port %d of %s (%s): no NetworkPolicy admits it", src.name, cp.number, ref(t), why))
				case !needed && by != "":
					if extra[by] == nil {
						order = append(order, by)
					}
					extra[by] = append(extra[by], src.name)
				}
			}
			for _, by := range order {
				which := "none of which connects to it"
				if len(extra[by]) == 1 {
					which = "which does not connect to it"
				}
				errs = append(errs, fmt.Errorf("%s: port %d (%s): NetworkPolicy %s admits %s, %s", ref(t), cp.number, cp.name, by, strings.Join(extra[by], ", "), which))
			}
		}
	}
	return errors.Join(errs...)
}

// scraperPeer stands for the pods that scrape metrics: any of a namespace labelled
// metricsNamespaceLabel=true.
const scraperPeer = "the metrics scraper"

// peer is a set of pods that may be a source of traffic: a workload's, or one standing for
// the pods outside the build a policy must name or must not admit.
type peer struct {
	name      string            // "deployment/order", "the metrics scraper", …
	namespace string            // "" for a client outside the cluster
	nsLabels  map[string]string // its namespace's labels
	labels    map[string]string // its pods' labels
}

// peers returns the build's workloads, then the stand-ins for the peers outside the build.
func (b build) peers(ns string) []peer {
	nsLabels := b.namespaceLabels(ns)
	var out []peer
	for _, o := range b.workloads() {
		out = append(out, peer{ref(o), ns, nsLabels, o.Spec.Template.Metadata.Labels})
	}
	for _, g := range b.edgeGateways() {
		out = append(out, edgePeers(ns, nsLabels, g)...)
	}
	return append(out,
		peer{name: scraperPeer, namespace: "monitoring", nsLabels: map[string]string{
			"kubernetes.io/metadata.name": "monitoring", metricsNamespaceLabel: "true"}},
		peer{name: "any other pod of the namespace", namespace: ns, nsLabels: nsLabels},
		peer{name: "a pod of another namespace", namespace: "elsewhere", nsLabels: map[string]string{
			"kubernetes.io/metadata.name": "elsewhere"}},
		peer{name: "a client outside the cluster"},
	)
}

// edgePeers stands for the proxies of Gateway g, wherever Envoy Gateway runs them: in its
// own namespace (its default), or in the Gateway's (its Gateway Namespace mode).
func edgePeers(ns string, nsLabels map[string]string, g string) []peer {
	labels := map[string]string{edgeGatewayLabel: g, edgeGatewayNamespaceLabel: ns}
	return []peer{
		{name: "the edge (Gateway " + g + "'s proxies in " + edgeNamespace + ")", namespace: edgeNamespace,
			nsLabels: map[string]string{"kubernetes.io/metadata.name": edgeNamespace}, labels: labels},
		{name: "the edge (Gateway " + g + "'s proxies in " + ns + ")", namespace: ns, nsLabels: nsLabels, labels: labels},
	}
}

// connection is one flow a component makes: from a peer to a container port of a workload.
type connection struct {
	from, to string // peer names; to is a workload's ref
	port     int
}

// connections are the flows a build's components make, each with where it is configured.
type connections map[connection]string

func (c connections) add(from, to string, port int, why string) {
	k := connection{from, to, port}
	if _, ok := c[k]; !ok {
		c[k] = why
	}
}

// connections gathers the flows CheckNetworkPolicies requires the policies to admit.
func (b build) connections(w *Workspace, ns string) connections {
	c := connections{}
	for _, o := range b.workloads() {
		for _, ctr := range o.Spec.Template.Spec.Containers {
			env := b.containerEnv(ctr)
			for _, name := range sortedKeys(env) {
				for _, hp := range dialAddrs(env[name]) {
					b.dial(c, ns, ref(o), hp, fmt.Sprintf("%s=%s", name, env[name]))
				}
			}
			for _, hp := range commandAddr.FindAllString(strings.Join(slices.Concat(ctr.Command, ctr.Args), " "), -1) {
				b.dial(c, ns, ref(o), hp, "its command dials "+hp)
			}
		}
		// A StatefulSet whose Service publishes not-ready pods is a cluster (NATS, Redis):
		// its members find each other through that Service before they are ready.
		if sv, ok := b.find("Service", o.Spec.ServiceName); o.Kind == "StatefulSet" && ok && sv.Spec.PublishNotReadyAddresses {
			for _, sp := range sv.Spec.Ports {
				b.dial(c, ns, ref(o), net.JoinHostPort(sv.Metadata.Name, strconv.Itoa(sp.Port)), "a cluster peer, through Service "+sv.Metadata.Name)
			}
		}
		if a := o.Spec.Template.Metadata.Annotations; a["prometheus.io/scrape"] == "true" {
			if p, err := strconv.Atoi(a["prometheus.io/port"]); err == nil {
				c.add(scraperPeer, ref(o), p, "prometheus.io/port: "+a["prometheus.io/port"])
			}
		}
	}
	if d, ok := w.Deployable("gateway"); ok {
		if dep, ctr, ok := b.deployment(d); ok {
			if pol, err := manifestPolicy(b, dep, ctr); err == nil && pol != nil {
				for _, sv := range pol.Services {
					if sv.DNS != "" {
						b.dial(c, ns, ref(dep), sv.DNS, "its policy finds "+sv.Name+" at "+sv.DNS)
					}
				}
			}
		}
	}
	nsLabels := b.namespaceLabels(ns)
	for _, r := range b {
		if r.Kind != "HTTPRoute" {
			continue
		}
		for _, pr := range r.Spec.ParentRefs {
			if _, ok := b.find("Gateway", pr.Name); !ok || pr.Namespace != "" && pr.Namespace != ns {
				continue
			}
			for _, e := range edgePeers(ns, nsLabels, pr.Name) {
				for _, rule := range r.Spec.Rules {
					for _, be := range rule.BackendRefs {
						hp := net.JoinHostPort(be.Name, strconv.Itoa(be.Port))
						b.dial(c, ns, e.name, hp, "HTTPRoute "+r.Metadata.Name+" sends to "+hp)
					}
				}
			}
		}
	}
	return c
}

// commandAddr finds host:port in a container's command line (redis-0.redis:6379).
var commandAddr = regexp.MustCompile(`\b[a-z0-9]([a-z0-9.-]*[a-z0-9])?:[0-9]{1,5}\b`)

// dial records the flow from a peer to host:port, when the host is a Service of namespace ns:
// to each workload the Service selects, at the container port the connection arrives on.
// Hosts outside the namespace are not its business, and an address naming a port the
// Service does not serve is checkManifestAddresses'.
func (b build) dial(c connections, ns, from, hostport, why string) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return
	}
	svc, ok := b.service(ns, host)
	if !ok {
		return
	}
	for _, t := range b.workloads() {
		if !selects(svc.Spec.Selector, t.Spec.Template.Metadata.Labels) {
			continue
		}
		if cp, ok := arrivesOn(svc, t, n); ok {
			c.add(from, ref(t), cp, why)
		}
	}
}

// arrivesOn returns the container port of workload t's pods on which a connection to port n
// of Service svc arrives. A headless Service's clients dial the pods themselves (DNS answers
// with their addresses) at n; a virtual IP forwards to the Service port's targetPort.
func arrivesOn(svc, t Object, n int) (int, bool) {
	ports := podPorts(t)
	if svc.Spec.ClusterIP != "None" {
		i := slices.IndexFunc(svc.Spec.Ports, func(sp ServicePort) bool { return sp.Port == n })
		if i < 0 {
			return 0, false
		}
		if tp := svc.Spec.Ports[i].TargetPort; tp != "" {
			j := slices.IndexFunc(ports, func(cp containerPortRef) bool { return cp.name == string(tp) || strconv.Itoa(cp.number) == string(tp) })
			if j < 0 {
				return 0, false
			}
			return ports[j].number, true
		}
	}
	return n, slices.ContainsFunc(ports, func(cp containerPortRef) bool { return cp.number == n })
}

// service returns the Service of namespace ns that host names: svc, svc.<ns>[.svc…], or a
// pod under a headless Service (redis-0.redis).
func (b build) service(ns, host string) (Object, bool) {
	labels := strings.Split(host, ".")
	for i, l := range labels {
		if svc, ok := b.find("Service", l); ok && (i+1 == len(labels) || labels[i+1] == ns) {
			return svc, true
		}
	}
	return Object{}, false
}

// schemePorts are the ports a URL without one dials.
var schemePorts = map[string]string{"http": "80", "https": "443"}

// dialAddrs returns the host:port each address of v dials: hostPorts', and a URL's without
// a port at its scheme's (http://gateway is gateway:80).
func dialAddrs(v string) []string {
	out := hostPorts(v)
	for part := range strings.SplitSeq(v, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" || u.Port() != "" {
			continue
		}
		if p, ok := schemePorts[u.Scheme]; ok {
			out = append(out, net.JoinHostPort(u.Hostname(), p))
		}
	}
	return out
}

// containerPortRef is one port a pod listens on.
type containerPortRef struct {
	number int
	name   string
}

// podPorts returns the ports of every container of a workload's pods.
func podPorts(o Object) []containerPortRef {
	var out []containerPortRef
	for _, c := range o.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			out = append(out, containerPortRef{p.ContainerPort, p.Name})
		}
	}
	return out
}

// admittedBy returns the first of the policies (all selecting the pods) with a rule that
// admits src to port cp, "" when none does.
func admittedBy(policies []Object, ns string, src peer, cp containerPortRef) string {
	for _, p := range policies {
		for _, r := range p.Spec.Ingress {
			if r.admitsPort(cp) && r.admitsPeer(ns, src) {
				return p.Metadata.Name
			}
		}
	}
	return ""
}

func (r IngressRule) admitsPort(cp containerPortRef) bool {
	if len(r.Ports) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Ports, func(pp NetworkPolicyPort) bool {
		if pp.Protocol != "" && pp.Protocol != "TCP" {
			return false
		}
		if pp.Port == "" || string(pp.Port) == cp.name {
			return true
		}
		n, err := strconv.Atoi(string(pp.Port))
		return err == nil && (cp.number == n || pp.EndPort != 0 && n <= cp.number && cp.number <= pp.EndPort)
	})
}

// admitsPeer reports whether the rule admits src, the rule's policy being in namespace ns.
func (r IngressRule) admitsPeer(ns string, src peer) bool {
	if len(r.From) == 0 {
		return true
	}
	return slices.ContainsFunc(r.From, func(p NetworkPeer) bool {
		switch {
		case p.IPBlock != nil:
			return true // may match pod addresses too: see CheckNetworkPolicies
		case src.namespace == "":
			return false
		case p.NamespaceSelector == nil:
			return src.namespace == ns && p.PodSelector != nil && p.PodSelector.matches(src.labels)
		default:
			return p.NamespaceSelector.matches(src.nsLabels) && (p.PodSelector == nil || p.PodSelector.matches(src.labels))
		}
	})
}

// matches reports whether pods with these labels are selected.
func (s *LabelSelector) matches(labels map[string]string) bool {
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, e := range s.MatchExpressions {
		v, has := labels[e.Key]
		ok := false
		switch e.Operator {
		case "In":
			ok = has && slices.Contains(e.Values, v)
		case "NotIn":
			ok = !has || !slices.Contains(e.Values, v)
		case "Exists":
			ok = has
		case "DoesNotExist":
			ok = !has
		}
		if !ok {
			return false
		}
	}
	return true
}

func (s *LabelSelector) empty() bool {
	return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

// isIngressPolicy reports whether a NetworkPolicy restricts ingress: it says so in
// policyTypes, or leaves them out (then it always does).
func (o Object) isIngressPolicy() bool {
	return len(o.Spec.PolicyTypes) == 0 || slices.Contains(o.Spec.PolicyTypes, "Ingress")
}

// workloads returns the build's objects that run pods.
func (b build) workloads() []Object {
	var out []Object
	for _, o := range b {
		if o.Kind == "Deployment" || o.Kind == "StatefulSet" || o.Kind == "Job" {
			out = append(out, o)
		}
	}
	return out
}

// edgeGateways returns the names of the build's Gateway API Gateways.
func (b build) edgeGateways() []string {
	var out []string
	for _, o := range b {
		if o.Kind == "Gateway" {
			out = append(out, o.Metadata.Name)
		}
	}
	return out
}

// namespace returns the namespace the build's objects are in: the first one named.
func (b build) namespace() string {
	for _, o := range b {
		if o.Metadata.Namespace != "" {
			return o.Metadata.Namespace
		}
	}
	return "default"
}

// namespaceLabels returns the labels of namespace ns: its object's in the build, and the
// kubernetes.io/metadata.name the API server sets on every namespace.
func (b build) namespaceLabels(ns string) map[string]string {
	labels := map[string]string{}
	if o, ok := b.find("Namespace", ns); ok {
		maps.Copy(labels, o.Metadata.Labels)
	}
	labels["kubernetes.io/metadata.name"] = ns
	return labels
}
