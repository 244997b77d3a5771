package deploycheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// readerMethods are the config.Reader methods that read a variable named by their first
// argument (platform/config).
var readerMethods = map[string]bool{
	"String": true, "Int": true, "Float": true, "Bool": true, "Duration": true,
	"Addr": true, "URL": true, "List": true,
}

// envName is what a variable name looks like; a literal of another shape is not one.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// packageScan is what one package's source says about the environment and the stores.
type packageScan struct {
	env       []EnvVar
	usesDB    bool
	usesRedis bool
}

// scanPackage reads the files of one package. A variable read is a call of a Reader method
// with a literal name as first argument, in a file that imports platform/config (or in that
// package itself); names built at run time (the gateway's UPSTREAM_<SERVICE>) are not seen
// here and have a rule of their own (see RequiredEnv).
func scanPackage(root, dir string, files []string) (packageScan, error) {
	var s packageScan
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return s, fmt.Errorf("scan: %w", err)
		}
		inConfig := f.Name.Name == "config" && importName(f, "boxoffice.dev/platform/config") == ""
		readsConfig := inConfig || importName(f, "boxoffice.dev/platform/config") != ""
		sqldb := importName(f, "boxoffice.dev/platform/sqldb")
		redisconn := importName(f, "boxoffice.dev/platform/redisconn")
		// x.OpenDB(...) is the platform's Server method when x is a value, not a package.
		onValue := func(x ast.Expr) bool {
			id, ok := x.(*ast.Ident)
			return !ok || !importsName(f, id.Name)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch {
			case readsConfig && readerMethods[sel.Sel.Name] && len(call.Args) >= 2:
				rel, _ := filepath.Rel(root, fset.Position(call.Pos()).Filename)
				at := fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(call.Pos()).Line)
				if v, ok := stringLit(call.Args[0]); ok && envName.MatchString(v) {
					def, _ := stringLit(call.Args[1])
					s.env = append(s.env, EnvVar{Name: v, Default: def, At: at})
				} else if prefix, ok := namePrefix(call.Args[0]); ok {
					s.env = append(s.env, EnvVar{Name: prefix + "*", At: at})
				}
			case sel.Sel.Name == "OpenDB" && onValue(sel.X), isPkgCall(call, sqldb, "Open"):
				s.usesDB = true
			case (sel.Sel.Name == "Redis" || sel.Sel.Name == "RedisAllowDown") && onValue(sel.X) && len(call.Args) == 1,
				isPkgCall(call, redisconn, "Resolve"):
				s.usesRedis = true
			}
			return true
		})
	}
	return s, nil
}

// namePrefix recognises a name built at run time from a literal prefix, "UPSTREAM_" + name.
func namePrefix(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BinaryExpr)
	for ok && b.Op == token.ADD {
		if v, lit := stringLit(b.X); lit && envName.MatchString(strings.TrimSuffix(v, "_")) {
			return v, true
		}
		b, ok = b.X.(*ast.BinaryExpr)
	}
	return "", false
}

// RequiredEnv returns the variables a container running d must set, each with the reason.
// The defaults in the code suit `boxoffice up` (one process, loopback ports, local files);
// in a container some of them point at nothing or at state nobody else shares. The rule:
//
//  1. NATS_URL and OTEL_EXPORTER_OTLP_ENDPOINT, for every deployable: without NATS a replica
//     misses the playground's control messages and its events; without OTLP, its traces.
//  2. DATABASE_URL when d's module opens a database: the default is a SQLite file inside the
//     container, lost with it and not shared by the replicas.
//  3. REDIS_URL when d's module uses Redis: the default is a store of d's own, so limits and
//     queues would not be shared by the replicas.
//  4. Every variable whose literal default names a loopback host (127.0.0.1, localhost, ::1):
//     inside a container the loopback is the container itself.
//  5. Every variable whose name ends in _KEY, _TOKEN or _SECRET: unset, a process generates
//     its own (or uses a published demo value), so replicas and restarts would disagree.
//
// The gateway's UPSTREAM_<SERVICE> variables are checked against its policy instead: see
// CheckUpstreams.
func RequiredEnv(d Deployable) map[string]string {
	req := map[string]string{
		"NATS_URL":                    "events and the control fan-out need NATS",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "traces need a collector",
	}
	if d.UsesDB {
		req["DATABASE_URL"] = "its module opens a database; the default SQLite file dies with the container"
	}
	if d.UsesRedis {
		req["REDIS_URL"] = "its module uses Redis; the default store is not shared by replicas"
	}
	for _, v := range d.Env {
		switch {
		case strings.HasSuffix(v.Name, "*"): // a family of names (UPSTREAM_*): none in particular is required
		case namesLoopback(v.Default):
			req[v.Name] = fmt.Sprintf("its default %s (%s) is the container itself", v.Default, v.At)
		case strings.HasSuffix(v.Name, "_KEY") || strings.HasSuffix(v.Name, "_TOKEN") || strings.HasSuffix(v.Name, "_SECRET"):
			req[v.Name] = fmt.Sprintf("key material (%s): unset, each process would have its own", v.At)
		}
	}
	return req
}

// runtimeEnv are variables the Go runtime reads, not the code: setting them is never a typo.
var runtimeEnv = []string{"GOMEMLIMIT", "GOMAXPROCS", "GOGC", "GODEBUG", "GOTRACEBACK"}

// knownEnv reports whether setting name for d has an effect: d's code reads it, the Go
// runtime does, or it is the gateway's UPSTREAM_<SERVICE> for a service of its policy.
func knownEnv(d Deployable, name string, upstreams map[string]string) bool {
	if d.Reads(name) || slices.Contains(runtimeEnv, name) {
		return true
	}
	_, ok := upstreams[name]
	return ok
}

// namesLoopback reports whether s is, or is a URL or host:port of, a loopback host.
func namesLoopback(s string) bool {
	host := s
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// importName returns the name file f uses for the package at importPath, "" when f does
// not import it.
func importName(f *ast.File, importPath string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return importPath[strings.LastIndex(importPath, "/")+1:]
		}
	}
	return ""
}

// importsName reports whether name is the name f uses for one of its imports.
func importsName(f *ast.File, name string) bool {
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if importName(f, p) == name {
			return true
		}
	}
	return false
}

// isPkgCall reports whether call is pkg.fn(...), pkg being the file's name for a package.
// (A local variable named like an imported package would fool it; gofmt'd BoxOffice code
// does not shadow its imports.)
func isPkgCall(call *ast.CallExpr, pkg, fn string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || pkg == "" || sel.Sel.Name != fn {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
