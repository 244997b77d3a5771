package policy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// pattern is a route's path pattern split into segments.
type pattern struct {
	raw  string
	segs []segment
}

// segment is one path segment of a pattern: a literal, {name} (any one segment) or
// {name...} (the rest of the path, last only).
type segment struct {
	lit  string
	kind segKind
}

type segKind int

// The segment kinds, from the most specific to the least.
const (
	literal segKind = iota
	wildcard
	rest
)

// parsePattern reads a path pattern: "/", "/v1/events", "/v1/events/{id}/holds",
// "/files/{path...}". Patterns are matched against cleaned paths, so they may not hold
// empty, "." or ".." segments, nor end with a slash (use {rest...} for a prefix).
func parsePattern(p string) (pattern, error) {
	if !strings.HasPrefix(p, "/") {
		return pattern{}, fmt.Errorf("%q: want a path starting with /", p)
	}
	pat := pattern{raw: p}
	if p == "/" {
		return pat, nil
	}
	parts := strings.Split(p[1:], "/")
	names := map[string]bool{}
	for i, s := range parts {
		switch {
		case s == "" || s == "." || s == "..":
			return pattern{}, fmt.Errorf("%q: empty, . or .. segment", p)
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
			n := s[1 : len(s)-1]
			kind := wildcard
			if base, ok := strings.CutSuffix(n, "..."); ok {
				if i != len(parts)-1 {
					return pattern{}, fmt.Errorf("%q: {%s} must be the last segment", p, n)
				}
				n, kind = base, rest
			}
			if n == "" || strings.ContainsAny(n, "{}.") || names[n] {
				return pattern{}, fmt.Errorf("%q: wildcard {%s} is empty, malformed or repeated", p, n)
			}
			names[n] = true
			pat.segs = append(pat.segs, segment{kind: kind})
		case strings.ContainsAny(s, "{}"):
			return pattern{}, fmt.Errorf("%q: a wildcard must be a whole segment", p)
		default:
			pat.segs = append(pat.segs, segment{lit: s})
		}
	}
	return pat, nil
}

// literalPrefix is the path up to the first wildcard.
func (p pattern) literalPrefix() string {
	var b strings.Builder
	for _, s := range p.segs {
		if s.kind != literal {
			b.WriteString("/")
			break
		}
		b.WriteString("/" + s.lit)
	}
	if len(p.segs) == 0 {
		return "/"
	}
	return b.String()
}

// matches reports whether the cleaned path's segments fit the pattern.
func (p pattern) matches(parts []string) bool {
	for i, s := range p.segs {
		if s.kind == rest {
			return true
		}
		if i >= len(parts) {
			return false
		}
		if s.kind == literal && parts[i] != s.lit || s.kind == wildcard && parts[i] == "" {
			return false
		}
	}
	return len(parts) == len(p.segs)
}

// compare orders two patterns that match the same path by specificity: the first segment
// where they differ decides, a literal beating {name} beating {name...}; at equal kinds the
// longer pattern wins. It returns > 0 when p is more specific than q.
func (p pattern) compare(q pattern) int {
	for i := 0; i < len(p.segs) && i < len(q.segs); i++ {
		if d := int(q.segs[i].kind) - int(p.segs[i].kind); d != 0 {
			return d
		}
	}
	return len(p.segs) - len(q.segs)
}

// same reports whether p and q match exactly the same paths.
func (p pattern) same(q pattern) bool {
	return slices.Equal(p.segs, q.segs)
}

// router finds the route of a request. It is built once per Snapshot and read-only after.
type router struct {
	entries []entry
}

type entry struct {
	method string // "" = any
	pat    pattern
	route  int
}

// add registers route i; it fails when another route has the same method and path shape.
func (rt *router) add(i int, method string, pat pattern) (conflict int, ok bool) {
	if method == "*" {
		method = ""
	}
	for _, e := range rt.entries {
		if e.method == method && e.pat.same(pat) {
			return e.route, false
		}
	}
	rt.entries = append(rt.entries, entry{method: method, pat: pat, route: i})
	return 0, true
}

// methodRank orders how a route's method fits the request: exact, GET for a HEAD, any.
func methodRank(routeMethod, method string) int {
	switch {
	case routeMethod == method:
		return 3
	case routeMethod == http.MethodGet && method == http.MethodHead:
		return 2
	case routeMethod == "":
		return 1
	}
	return 0
}

// match returns the index of the most specific route for method and a cleaned path, or -1
// with the methods that the path does allow (empty when no route has the path at all).
func (rt *router) match(method, path string) (int, []string) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if path == "/" {
		parts = nil
	}
	best, bestRank := -1, 0
	var allowed []string
	for i, e := range rt.entries {
		if !e.pat.matches(parts) {
			continue
		}
		rank := methodRank(e.method, method)
		if rank == 0 {
			if !slices.Contains(allowed, e.method) {
				allowed = append(allowed, e.method)
			}
			continue
		}
		if best < 0 {
			best, bestRank = i, rank
			continue
		}
		c := e.pat.compare(rt.entries[best].pat)
		if c > 0 || c == 0 && rank > bestRank {
			best, bestRank = i, rank
		}
	}
	if best < 0 {
		slices.Sort(allowed)
		return -1, allowed
	}
	return rt.entries[best].route, nil
}
