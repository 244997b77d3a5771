package gateway

import (
	"bytes"
	"encoding/json"
	"html/template"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"boxoffice.dev/gateway/policy"
)

// serveIndex answers GET and HEAD of exactly "/", unless the policy routes it, with the index:
// snap's public routes and their policy, the GraphQL endpoints, where the playground and the
// docs are; a page for a browser (Accept: text/html), else JSON. It comes after the pre-limit
// and is recorded by observe (outcome index, route none) like any answer of the gateway's own.
// It needs no authentication: it tells nothing that a 401, 404 or 429 would not.
func (g *gateway) serveIndex(w http.ResponseWriter, r *http.Request, snap *policy.Snapshot) outcome {
	if r.URL.Path != "/" || r.URL.RawPath != "" || r.Method != http.MethodGet && r.Method != http.MethodHead {
		return proceed
	}
	if rt, allowed := snap.Match(r.Method, "/"); rt != nil || len(allowed) > 0 {
		return proceed
	}
	page := g.index.of(snap)
	h := w.Header()
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", "no-cache") // the policy, and so the page, changes live
	h.Set("X-Content-Type-Options", "nosniff")
	body := page.json
	if wantsHTML(r.Header.Values("Accept")) {
		body = page.html
		h.Set("Content-Type", "text/html; charset=utf-8")
		// Nothing to fetch, nothing to run: the page is its own markup and inline style.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	} else {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return outcomeIndex
}

// outcomeIndex is the outcome of a request the index answered: the gateway's own answer, but
// not a rejection.
const outcomeIndex = "index"

// index renders the index of a snapshot once, and keeps the last one: the policy changes
// rarely and the page is read often. The zero value works and names no playground. Safe for
// concurrent use.
type index struct {
	// playground is the playground's URL (PLAYGROUND_URL); "" leaves it out.
	playground string
	last       atomic.Pointer[renderedIndex]
}

// renderedIndex is the index of snap in both forms.
type renderedIndex struct {
	snap       *policy.Snapshot
	json, html []byte
}

// of returns the index of snap. Two requests that race on a new snapshot may both render it;
// either result is right.
func (ix *index) of(snap *policy.Snapshot) *renderedIndex {
	if last := ix.last.Load(); last != nil && last.snap == snap {
		return last
	}
	page := newIndexPage(snap, ix.playground)
	out := &renderedIndex{snap: snap}
	out.json, _ = json.MarshalIndent(page, "", "  ") // plain data: never fails
	out.json = append(out.json, '\n')
	var b bytes.Buffer
	if err := indexHTML.Execute(&b, page); err == nil { // the template is fixed and its data plain
		out.html = b.Bytes()
	}
	ix.last.Store(out)
	return out
}

// indexPage is the index's content; its JSON form is the JSON answer.
type indexPage struct {
	Name string `json:"name"`
	// Playground is the playground's URL; absent when the gateway was not told it.
	Playground string         `json:"playground,omitempty"`
	GraphQL    []indexGraphQL `json:"graphql"`
	Docs       []indexDoc     `json:"docs"`
	Routes     []indexRoute   `json:"routes"`
	Plans      []indexPlan    `json:"plans"`
}

type indexGraphQL struct {
	Path string `json:"path"`
	Auth string `json:"auth"`
}

// indexDoc is a document of the repository, by its path there.
type indexDoc struct {
	Title string `json:"title"`
	Path  string `json:"path"`
}

type indexRoute struct {
	ID     string       `json:"id"`
	Method string       `json:"method"`
	Path   string       `json:"path"`
	Auth   string       `json:"auth"`
	Limits []indexLimit `json:"limits"`
}

type indexLimit struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	Algorithm  string `json:"algorithm"`
	Rate       string `json:"rate"`
	Burst      int    `json:"burst,omitempty"`
	CostHeader string `json:"cost_header,omitempty"`
}

// indexPlan is what an API key's plan allows, per tenant, across every route.
type indexPlan struct {
	Name      string `json:"name"`
	Unlimited bool   `json:"unlimited,omitempty"`
	API       string `json:"api,omitempty"`
	Quota     string `json:"quota,omitempty"`
}

// graphQLPrefix marks the routes listed as GraphQL endpoints.
const graphQLPrefix = "/graphql/"

// indexDocs are the documents a newcomer reads first, as paths in the repository.
var indexDocs = []indexDoc{
	{"Getting started", "README.md"},
	{"Architecture", "docs/architecture.md"},
	{"Lessons: rate limiting, the gateway, BFFs, failure modes", "docs/lessons/"},
	{"The services' REST APIs (OpenAPI)", "docs/openapi/"},
	{"Exercises", "docs/exercises/README.md"},
}

// newIndexPage lists snap's public routes in policy order. Routes restricted to plans (the
// internal plan's admin routes) are left out: they are BoxOffice's own, not a client's.
func newIndexPage(snap *policy.Snapshot, playground string) indexPage {
	p := indexPage{Name: "BoxOffice gateway", Playground: playground, Docs: indexDocs,
		GraphQL: []indexGraphQL{}, Routes: []indexRoute{}, Plans: []indexPlan{}}
	for _, rt := range snap.Routes() {
		if len(rt.Plans) > 0 {
			continue
		}
		method := rt.Match.Method
		if method == "" {
			method = "*"
		}
		ir := indexRoute{ID: rt.ID, Method: method, Path: rt.Match.Path, Auth: string(rt.Auth), Limits: []indexLimit{}}
		for _, l := range rt.Limits {
			ir.Limits = append(ir.Limits, indexLimit{ID: l.ID, Key: l.Limit.Key, Algorithm: l.Algorithm, Rate: l.Rate, Burst: l.Burst, CostHeader: l.CostHeader})
		}
		p.Routes = append(p.Routes, ir)
		if strings.HasPrefix(rt.Match.Path, graphQLPrefix) {
			p.GraphQL = append(p.GraphQL, indexGraphQL{Path: rt.Match.Path, Auth: string(rt.Auth)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(snap.Policy.Plans)) {
		pl := snap.Policy.Plans[name]
		p.Plans = append(p.Plans, indexPlan{Name: name, Unlimited: pl.Unlimited, API: pl.API, Quota: pl.Quota})
	}
	return p
}

// wantsHTML reports whether an Accept header prefers text/html to application/json: a
// browser's does, curl's */* does not. A range without q counts as q=1; */* counts for
// neither, so a client that does not say gets JSON.
func wantsHTML(accept []string) bool {
	var html, js float64
	for _, line := range accept {
		for part := range strings.SplitSeq(line, ",") {
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil {
					continue
				}
			}
			switch mt {
			case "text/html":
				html = max(html, q)
			case "application/json":
				js = max(js, q)
			}
		}
	}
	return html > 0 && html > js
}

// indexHTML is the index as a page. html/template escapes every value for where it lands,
// so a route, limit or URL the policy holds can never become markup.
var indexHTML = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Name}}</title>
<style>
body { font: 15px/1.5 system-ui, sans-serif; max-width: 64rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
code { font-family: ui-monospace, monospace; font-size: 90%; }
</style>
</head>
<body>
<h1>{{.Name}}</h1>
<p>The single front door of BoxOffice: every request below is routed, authenticated and rate-limited here, by the policy in force. Ask for this page with <code>Accept: application/json</code> for the same list as JSON.</p>
<h2>Playground</h2>
{{if .Playground}}<p><a href="{{.Playground}}">{{.Playground}}</a>: launch a scenario and watch the limits work.</p>
{{else}}<p>Not configured for this gateway (<code>PLAYGROUND_URL</code>); <code>make up</code> serves it on port 8090.</p>
{{end}}
<h2>GraphQL</h2>
<ul>
{{range .GraphQL}}<li><code>POST {{.Path}}</code> (auth {{.Auth}}: <code>Authorization: Bearer &lt;token&gt;</code> from <code>POST /v1/auth/login</code>)</li>
{{else}}<li>none in this policy</li>
{{end}}</ul>
<p>GraphiQL, where the BFFs serve it (<code>make up</code>), opens through here without a token: the <code>graphiql-*</code> routes below. Paste the token into its Headers editor.</p>
<h2>Docs</h2>
<ul>
{{range .Docs}}<li>{{.Title}}: <code>{{.Path}}</code> in the repository</li>
{{end}}</ul>
<h2>Routes</h2>
<table>
<thead><tr><th>method</th><th>path</th><th>auth</th><th>limits</th></tr></thead>
<tbody>
{{range .Routes}}<tr><td><code>{{.Method}}</code></td><td><code>{{.Path}}</code></td><td>{{.Auth}}</td><td>{{range $i, $l := .Limits}}{{if $i}}<br>{{end}}<code>{{$l.ID}}</code>: {{$l.Rate}} per {{$l.Key}} ({{$l.Algorithm}}{{if $l.Burst}}, burst {{$l.Burst}}{{end}}{{if $l.CostHeader}}, costs from {{$l.CostHeader}}{{end}}){{else}}&mdash;{{end}}</td></tr>
{{end}}</tbody>
</table>
<h2>Plans</h2>
<p>A request with an API key (<code>X-Api-Key</code>) spends its plan's allowance, per tenant.</p>
<ul>
{{range .Plans}}<li><code>{{.Name}}</code>: {{if .Unlimited}}unlimited{{else}}{{if .API}}{{.API}}{{end}}{{if .Quota}}, quota {{.Quota}}{{end}}{{end}}</li>
{{end}}</ul>
</body>
</html>
`))
