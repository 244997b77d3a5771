package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/testkit"
)

// TestPolicyTemplatesLoad renders every policy template the targets use and loads it as the
// gateway does (parsed, validated, compiled): a template the gateway refuses would leave its
// row out of every run, reported only as "not measured".
func TestPolicyTemplatesLoad(t *testing.T) {
	names, err := fs.Glob(templates, "policy-*.yaml.tmpl")
	if err != nil || len(names) < 4 {
		t.Fatalf("policy templates = %q, %v; want the four of the gateway targets", names, err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			snap := loadPolicy(t, name, "http://127.0.0.1:1")
			if r, _ := snap.Match(http.MethodGet, benchPath); r == nil {
				t.Errorf("no route for GET %s, which the bench polls until the gateway is ready", benchPath)
			}
		})
	}
	snap := loadPolicy(t, "policy-graphql.yaml.tmpl", "http://127.0.0.1:1")
	switch r, _ := snap.Match(http.MethodPost, graphqlPath); {
	case r == nil:
		t.Errorf("policy-graphql.yaml.tmpl: no route for POST %s", graphqlPath)
	case r.Mutations == nil || r.Cost == nil || len(r.Limits) != 1:
		t.Errorf("policy-graphql.yaml.tmpl: POST %s matches route %s, GraphQL %v, cost %v, with %d limits; want a GraphQL route deciding two rules as the JWT row does: one limit and the points",
			graphqlPath, r.ID, r.Mutations != nil, r.Cost != nil, len(r.Limits))
	}
}

// loadPolicy renders the policy template name for upstream and compiles it.
func loadPolicy(t *testing.T, name, upstream string) *policy.Snapshot {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := render(name, path, map[string]any{"Upstream": upstream}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(data)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	snap, err := policy.Compile(p, nil)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return snap
}

// TestGraphQLRowReadsTheOperation runs the gateway with the gateway-graphql target's policy
// in front of the bench's upstream and sends the row's request, then others on the same
// route: the gateway must read each as GraphQL (a mutation it does not map is refused with
// 400 before the upstream), or the row would measure plain proxying under another name.
func TestGraphQLRowReadsTheOperation(t *testing.T) {
	seed := make([]byte, 32)
	rand.Read(seed)
	up := startUpstream(t, hex.EncodeToString(seed))
	tok, err := userToken(hex.EncodeToString(seed), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := render("policy-graphql.yaml.tmpl", policyFile, map[string]any{"Upstream": up.URL}); err != nil {
		t.Fatal(err)
	}
	rd := testkit.StartRedis(t)
	gw := testkit.RunProcess(t, gateway.Run, map[string]string{
		"POLICY_FILE": policyFile, "REDIS_URL": rd.URL(), "AUTH_URL": up.URL, "DATA_DIR": dir,
		"ADMIN_ADDR": fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)), "ADMIN_TOKEN": "bench-admin-token",
		"AUTH_GRPC_ADDR": "127.0.0.1:1",
		// As the targets run (benchLimiter): a loaded test machine may miss the 5ms bound.
		"RATELIMIT_TIMEOUT": "1s",
	})
	header := http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}}
	row := running{url: gw.HTTPURL + graphqlPath, header: header, body: graphqlBody}
	l := newLoader(row.request())
	t.Cleanup(l.client.CloseIdleConnections)
	testkit.Eventually(t, 20*time.Second, "the row's request answered 200", func() bool {
		return l.send(context.Background()) == nil
	})

	tests := []struct {
		name   string
		header http.Header
		body   string
		status int
		wantIn string // in the body
	}{
		{"the row's query", header, string(graphqlBody), http.StatusOK, string(benchBody)},
		{"a mapped mutation", header, `{"query":"mutation { placeHold(eventId: \"e1\", quantity: 1) { id } }"}`, http.StatusOK, string(benchBody)},
		{"a mutation not mapped", header, `{"query":"mutation { releaseHold(id: \"h1\") { id } }"}`, http.StatusBadRequest, "mutation releaseHold is not in the gateway's policy"},
		{"not GraphQL", header, `{"query":"event(id: 1"}`, http.StatusBadRequest, "not valid GraphQL"},
		{"no token", http.Header{"Content-Type": {"application/json"}}, string(graphqlBody), http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, row.url, strings.NewReader(tt.body))
			req.Header = tt.header
			res, err := l.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			if res.StatusCode != tt.status || !bytes.Contains(body, []byte(tt.wantIn)) {
				t.Errorf("POST %s %s = %d %s, want %d containing %q", graphqlPath, tt.body, res.StatusCode, body, tt.status, tt.wantIn)
			}
		})
	}
}

// startUpstream serves the upstream role's handler, with the JWKS of the key of seedHex,
// until the test ends.
func startUpstream(t *testing.T, seedHex string) *httptest.Server {
	t.Helper()
	h, err := upstreamHandler(seedHex)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
