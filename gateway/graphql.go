package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// readOperation reads the GraphQL operation the BFF will run (a POST's body, a GET's URL, a
// persisted query's hash through the gateway's cache), so the limits step spends what its
// fields spend and what it costs (docs/lessons/bff.md). It answers 400 for no operation or one
// costing more than its budget can hold, and PERSISTED_QUERY_NOT_FOUND for an unknown hash.
// Nil for other routes and methods: they keep the route's limits.
func (g *gateway) readOperation(w http.ResponseWriter, r *http.Request, rt *policy.CompiledRoute) (*graphqlop.Operation, outcome) {
	if rt.GraphQL == nil {
		return nil, proceed
	}
	req, ok, err := operationRequest(r)
	if ok && err == nil {
		err = g.persisted.Resolve(&req)
	}
	var op graphqlop.Operation
	if ok && err == nil {
		op, err = graphqlop.Parse(req, costModel(rt))
	}
	if err == nil && ok {
		err = affordable(rt, op)
	}
	switch {
	case errors.Is(err, graphqlop.ErrNotPersisted):
		writeNotPersisted(w)
		return nil, outcomeNotPersisted
	case err != nil:
		problem.Write(w, r, nil, err)
		return nil, outcomeBadOperation
	case ok:
		return &op, proceed
	}
	return nil, proceed
}

// operationRequest reads the GraphQL request of r where gqlgen's transports read it: a POST's
// JSON body, a GET's URL query. False when r carries none: another method, or a body the
// gateway could not read whole (over max_body_bytes: the upstream call fails the same way,
// so nothing runs). The body is put back for the upstream.
func operationRequest(r *http.Request) (graphqlop.Request, bool, error) {
	switch r.Method {
	case http.MethodGet:
		req, err := graphqlop.FromURL(r.URL.Query())
		return req, true, err
	case http.MethodPost:
		data, ok := readBody(r)
		if !ok {
			return graphqlop.Request{}, false, nil
		}
		req, err := graphqlop.FromJSON(data)
		return req, true, err
	}
	return graphqlop.Request{}, false, nil
}

func costModel(rt *policy.CompiledRoute) graphqlop.CostModel {
	if rt.Cost == nil {
		return graphqlop.CostModel{}
	}
	return rt.Cost.Model
}

// affordable refuses an operation that costs more than its budget holds when full: no wait
// would let it pass, so it is the request's fault (400), not a 429 with a Retry-After.
func affordable(rt *policy.CompiledRoute, op graphqlop.Operation) error {
	if rt.Cost == nil {
		return nil
	}
	rule := rt.Cost.Limit.Rule
	most := rule.Limit
	if rule.Burst > 0 {
		most = rule.Burst
	}
	if op.Cost > most {
		return problem.InvalidField("query", "costs %d points, more than the %d that %s holds at most: ask for fewer objects (a smaller first or limit)", op.Cost, most, rule.ID)
	}
	return nil
}

// setQueryCost tells the BFF what the operation cost, for its response's extensions.cost.
func setQueryCost(h http.Header, cost *limits.QueryCost) {
	if cost == nil {
		return
	}
	b, _ := json.Marshal(cost) // a struct of numbers and a validated id: cannot fail
	h.Set(identity.HeaderQueryCost, string(b))
}

// notPersisted is a GraphQL response saying the hash is unknown, as the BFFs (gqlgen's APQ)
// word it, with status 200 as they answer it.
var notPersisted = []byte(`{"errors":[{"message":"` + graphqlop.ErrNotPersisted.Error() + `","extensions":{"code":"` + graphqlop.CodeNotPersisted + `"}}]}` + "\n")

func writeNotPersisted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(notPersisted)
}

// readBody returns r's whole body and puts it back for the upstream; false when it could not
// be read whole (too large, or cut off), in which case the upstream's read fails the same way.
func readBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	data, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = &replayBody{data: data, err: err}
	return data, err == nil
}

// replayBody hands out data, then err (io.EOF when nil): a body read once and put back.
type replayBody struct {
	data []byte
	err  error
}

func (b *replayBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func (b *replayBody) Close() error { return nil }
