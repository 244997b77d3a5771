// Package limits applies a policy's rate limits and quotas to a request: it builds the rate
// limiter requests of a route, an identity and a plan (Build), writes the client contract of
// design §5 — RateLimit-Policy, RateLimit, X-RateLimit-*, Retry-After and the 429 problem
// body — (headers.go), and settles what is only known once the response is (Enforcer.Settle):
// concurrency slots to release and costs read from the response.
package limits

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/problem"
)

// Subject is what a request's limit keys are made of.
type Subject struct {
	Route  *policy.CompiledRoute
	Caller authn.Caller
	IP     netip.Addr
	// Request gives headers and, for json:<field> keys, the body, which Build reads (within
	// the body limit already applied) and puts back for the upstream.
	Request *http.Request
	// Operation is the GraphQL operation of a request to a GraphQL route, as the gateway
	// read it (graphqlop); nil when the request carries none.
	Operation *graphqlop.Operation
}

// Charge is a limit whose cost is read from a response header after the response.
type Charge struct {
	Request ratelimit.Request
	Header  string
}

// Built is what a request spends: the rate limiter requests to decide and the charges to
// settle once the response is known.
type Built struct {
	Requests []ratelimit.Request
	Charges  []Charge
	// Cost is the index in Requests of a GraphQL operation's cost in points; -1 for none.
	Cost int
}

// Build returns what s spends under snap: the route's limits whose keys the request can fill;
// on a GraphQL route, for each mapped root field the limits of its REST route, keyed as that
// route keys them (the route's own limits for the rest), and the operation's cost; for an API
// key, its plan's rules keyed by tenant, with the tenant's override of the api rate. An
// unlimited plan gets none. The error is a *problem.Error (400) for an unmapped mutation
// field. No I/O beyond reading the body for json:<field> keys. See docs/lessons/bff.md,
// "One budget for a write, whichever door".
func Build(snap *policy.Snapshot, s Subject) (Built, error) {
	out := Built{Cost: -1}
	body := lazyBody{r: s.Request}
	spenders := []*policy.CompiledRoute{s.Route}
	if s.Route.GraphQL != nil && s.Operation != nil { // before the plan: an unmapped write is refused to everyone
		var err error
		if spenders, err = fieldRoutes(s.Route, s.Operation); err != nil {
			return out, err
		}
	}
	var plan *policy.CompiledPlan
	if s.Caller.Tenant != "" {
		if plan = snap.Plan(s.Caller.Plan); plan != nil && plan.Unlimited {
			return out, nil
		}
	}
	n := len(s.Route.Limits) + 1
	if plan != nil {
		n += 2 // its api rate (or the tenant's override) and its quota
	}
	out.Requests = make([]ratelimit.Request, 0, n)
	for _, rt := range spenders {
		as := s
		as.Route = rt
		for _, l := range rt.Limits {
			key, ok := as.key(l.Key, &body)
			if !ok {
				continue
			}
			if i := slices.IndexFunc(out.Requests, func(q ratelimit.Request) bool { return q.Rule.ID == l.Rule.ID && q.Key == key }); i >= 0 {
				// The limiter decides a rule and key once per call: a second call of the
				// same write spends its cost on the same request.
				out.Requests[i].Cost = cost(out.Requests[i]) + cost(ratelimit.Request{Rule: l.Rule})
				continue
			}
			q := ratelimit.Request{Rule: l.Rule, Key: key}
			out.Requests = append(out.Requests, q)
			if l.CostHeader != "" {
				out.Charges = append(out.Charges, Charge{Request: q, Header: l.CostHeader})
			}
		}
	}
	if c := s.Route.Cost; c != nil && s.Operation != nil {
		if key, ok := s.key(c.Limit.Key, &body); ok {
			out.Cost = len(out.Requests)
			out.Requests = append(out.Requests, ratelimit.Request{Rule: c.Limit.Rule, Key: key, Cost: s.Operation.Cost})
		}
	}
	unchain(out.Requests)
	if plan != nil {
		tenantKey := "tenant:" + s.Caller.Tenant
		if o, ok := snap.TenantOverride(s.Caller.Tenant, s.Route.ID); ok {
			out.Requests = append(out.Requests, ratelimit.Request{Rule: o, Key: tenantKey})
		} else if plan.API != nil {
			out.Requests = append(out.Requests, ratelimit.Request{Rule: *plan.API, Key: tenantKey})
		}
		if plan.Quota != nil {
			out.Requests = append(out.Requests, ratelimit.Request{Rule: *plan.Quota, Key: tenantKey})
		}
	}
	return out, nil
}

// unchain decides alone, at its own share and without borrowing, a level of a hierarchy
// whose parent does not count this request (an anonymous caller has no plan), or whose
// parent a level before it already claims (two GraphQL fields of two routes): the limiter
// asks a parent once per call, for one child.
func unchain(reqs []ratelimit.Request) {
	for i := range reqs {
		r := &reqs[i].Rule
		if r.Level == nil || r.Level.Parent == "" {
			continue
		}
		parent := r.Level.Parent
		present := slices.ContainsFunc(reqs, func(q ratelimit.Request) bool { return q.Rule.ID == parent })
		claimed := slices.ContainsFunc(reqs[:i], func(q ratelimit.Request) bool { return q.Rule.Level != nil && q.Rule.Level.Parent == parent })
		if !present || claimed {
			r.Level = &ratelimit.Level{Reserve: r.Level.Reserve} // a copy: the policy's rule is shared
		}
	}
}

// cost is what q spends: its own cost, else its rule's, else 1.
func cost(q ratelimit.Request) int {
	switch {
	case q.Cost > 0:
		return q.Cost
	case q.Rule.Cost > 0:
		return q.Rule.Cost
	}
	return 1
}

// fieldRoutes returns the routes whose limits an operation on the GraphQL route rt spends:
// for a mutation, the mapped route of each root field (an unmapped one is refused); for a
// query, the mapped route of each mapped field, and rt for the others. rt alone when no
// field runs anything (only __typename).
func fieldRoutes(rt *policy.CompiledRoute, op *graphqlop.Operation) ([]*policy.CompiledRoute, error) {
	routes := make([]*policy.CompiledRoute, 0, len(op.Fields))
	own := false
	for _, f := range op.Fields {
		if op.Type == graphqlop.Mutation {
			m, ok := rt.Mutations[f]
			if !ok {
				return nil, problem.InvalidField("query", "mutation %s is not in the gateway's policy, so it has no limits: it is refused until the policy maps it to a route", f)
			}
			routes = append(routes, m)
			continue
		}
		if m, ok := rt.Queries[f]; ok {
			routes = append(routes, m)
		} else if !own {
			own = true
			routes = append([]*policy.CompiledRoute{rt}, routes...)
		}
	}
	if len(routes) == 0 {
		return []*policy.CompiledRoute{rt}, nil
	}
	return routes, nil
}

// key builds a limit's key for the subject. One part is "user:42"; several are
// "{user:42}:route:holds", the first part a Redis Cluster hash tag so that every limit of
// one client lands on one slot and is decided in one script call. Values a client chooses
// freely (headers, body fields) are hashed: they cannot break the key's shape and no
// personal data lands in Redis.
func (s Subject) key(parts []policy.KeyPart, body *lazyBody) (string, bool) {
	if len(parts) == 1 {
		return s.part(parts[0], body)
	}
	var b strings.Builder
	for i, p := range parts {
		v, ok := s.part(p, body)
		if !ok {
			return "", false
		}
		if i == 0 {
			b.WriteString("{" + v + "}")
		} else {
			b.WriteString(":" + v)
		}
	}
	return b.String(), true
}

func (s Subject) part(p policy.KeyPart, body *lazyBody) (string, bool) {
	var v string
	switch p.Kind {
	case policy.KeyUser:
		v = s.Caller.User
	case policy.KeyTenant:
		v = s.Caller.Tenant
	case policy.KeyPlan:
		if s.Caller.Tenant != "" {
			v = s.Caller.Plan
		}
	case policy.KeyGlobal:
		v = "all"
	case policy.KeyAPIKey:
		v = s.Caller.KeyID
	case policy.KeyRoute:
		v = s.Route.ID
	case policy.KeyIP:
		if !s.IP.IsValid() {
			return "", false
		}
		return IPKey(s.IP), true
	case policy.KeyNet:
		n, ok := network(s.IP)
		if !ok {
			return "", false
		}
		var buf [4 + 43]byte // "net:" and the longest IPv6 prefix text
		return string(n.AppendTo(append(buf[:0], "net:"...))), true
	case policy.KeyHeader:
		if h := strings.TrimSpace(s.Request.Header.Get(p.Name)); h != "" {
			v = hashed(h)
		}
		return "header:" + strings.ToLower(p.Name) + ":" + v, v != ""
	case policy.KeyJSON:
		// Folded so that "Ana@Example.org " and "ana@example.org" share one budget.
		if f := strings.ToLower(strings.TrimSpace(body.field(p.Name))); f != "" {
			v = hashed(f)
		}
		return "json:" + p.Name + ":" + v, v != ""
	}
	return string(p.Kind) + ":" + v, v != ""
}

// IPKey is the key of the ip dimension for a valid address: "ip:203.0.113.7", an
// IPv4-mapped IPv6 address written as the IPv4 address it stands for, without a zone.
func IPKey(a netip.Addr) string {
	// "ip:" and the address in one allocation: this key is built for most requests.
	var buf [3 + 39]byte // "ip:" and the longest IPv6 text without a zone
	return string(a.Unmap().WithZone("").AppendTo(append(buf[:0], "ip:"...)))
}

// network is the network of a client address that the net key counts: its /24 for IPv4, and
// for IPv6 its /64, the block one subscriber is usually given. An IPv4-mapped IPv6 address
// (::ffff:203.0.113.7) is the IPv4 address it stands for. False for the zero Addr.
func network(a netip.Addr) (netip.Prefix, bool) {
	if !a.IsValid() {
		return netip.Prefix{}, false
	}
	a = a.Unmap().WithZone("")
	bits := 64
	if a.Is4() {
		bits = 24
	}
	p, err := a.Prefix(bits)
	return p, err == nil
}

func hashed(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:8])
}

// lazyBody reads a request's body once, on first need, and puts it back for the upstream.
type lazyBody struct {
	r       *http.Request
	read    bool
	data    []byte
	ok      bool // the body was read whole
	parsed  bool
	members []member
}

// bytes returns the whole body; false when it could not be read (too large, or cut off),
// in which case the upstream's read fails the same way.
func (b *lazyBody) bytes() ([]byte, bool) {
	if !b.read {
		b.read = true
		if b.r.Body == nil || b.r.Body == http.NoBody {
			b.ok = true
			return nil, true
		}
		data, err := io.ReadAll(b.r.Body)
		b.r.Body.Close()
		if err != nil {
			b.r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), failingReader{err}))
			return nil, false
		}
		b.r.Body = io.NopCloser(bytes.NewReader(data))
		b.data, b.ok = data, true
	}
	return b.data, b.ok
}

// field returns the top-level string field name of the body as the service behind the
// gateway reads it (see stringField); "" when the body holds none.
func (b *lazyBody) field(name string) string {
	if !b.parsed {
		b.parsed = true
		if data, ok := b.bytes(); ok && len(data) > 0 {
			b.members = topLevel(data)
		}
	}
	return stringField(b.members, name)
}

// member is one name and value of a JSON object, the name unescaped.
type member struct {
	name  string
	value json.RawMessage
}

// topLevel returns the members of the first JSON value in data, in order, when that value is
// an object; nil when it is not, or is not valid JSON. Only the first value counts, as it does
// for a service that decodes its body with a json.Decoder: what follows it is the service's
// to refuse or ignore, and the key must name what the service reads.
func topLevel(data []byte) []member {
	dec := json.NewDecoder(bytes.NewReader(data))
	var first json.RawMessage
	if dec.Decode(&first) != nil { // checks the whole value, so the walk below cannot fail
		return nil
	}
	dec = json.NewDecoder(bytes.NewReader(first))
	if t, _ := dec.Token(); t != json.Delim('{') {
		return nil
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		name, ok := t.(string) // inside an object a name comes before each value
		m := member{name: name}
		if !ok || dec.Decode(&m.value) != nil {
			return nil
		}
		ms = append(ms, m)
	}
	return ms
}

// stringField returns what encoding/json (v1, which the services decode with) leaves in a
// string field tagged name after decoding members into it: names match under its case
// folding, the last string wins, null and other non-strings leave the field as it was. So the
// key never differs from what the service reads, whatever spellings and duplicates a client
// sends. See docs/lessons/rate-limiting.md, "Login: limit the guesser, not the owner".
func stringField(members []member, name string) string {
	var v string
	for _, m := range members {
		if !strings.EqualFold(m.name, name) {
			continue
		}
		var s string
		if m.value[0] == '"' && json.Unmarshal(m.value, &s) == nil {
			v = s
		}
	}
	return v
}

// failingReader returns err once the bytes before it are read.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }
