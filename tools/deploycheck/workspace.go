package deploycheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// Workspace is the source tree the deployment files describe, read from the code rather than
// listed by hand: a deployable added to the tree is one the checks then look for.
type Workspace struct {
	Root        string       // absolute path of the directory holding go.work
	Modules     []string     // go.work's `use` directories, slash-separated, e.g. "services/catalog"
	Deployables []Deployable // sorted by Name
}

// Deployable is one process that ships as a container image: a main package at
// <Module>/cmd/<Name> whose main calls server.Exec. (cmd/boxoffice, the all-in-one CLI, has its
// main at its module's root and is not one.)
type Deployable struct {
	Name     string // e.g. "catalog", "bff-mobile"; also its name in the gateway's policy
	Module   string // its module's directory, e.g. "services/catalog": the Dockerfile's MODULE
	Main     string // its main package as `go build` takes it, e.g. "./services/catalog/cmd/catalog"
	HTTPPort int    // the port of its Spec's default HTTP_ADDR
	GRPCPort int    // the port of its Spec's default GRPC_ADDR; 0 = no gRPC listener
	// Edge is its Spec's Edge: its HTTP port is public and serves no /metrics, which it
	// serves on its ADMIN_ADDR instead.
	Edge bool

	// Env is every environment variable its code reads through a config.Reader with a
	// literal name, in the order found, including the platform's (platform/config/process.go).
	Env []EnvVar
	// UsesDB and UsesRedis say whether its own module opens a database (Server.OpenDB or
	// sqldb.Open) or connects to Redis (Server.Redis, Server.RedisAllowDown or
	// redisconn.Resolve).
	UsesDB, UsesRedis bool
}

// EnvVar is one variable a deployable reads.
type EnvVar struct {
	Name    string // e.g. "REDIS_URL"; "UPSTREAM_*" for names built from a literal prefix
	Default string // the default when it is a string literal; "" otherwise
	At      string // where it is read, file:line relative to the workspace root
}

// Reads reports whether d reads the variable name, by that name or as one of a family its
// code builds at run time (Env has "UPSTREAM_*" for "UPSTREAM_" + service).
func (d Deployable) Reads(name string) bool {
	return slices.ContainsFunc(d.Env, func(v EnvVar) bool {
		prefix, family := strings.CutSuffix(v.Name, "*")
		return v.Name == name || family && strings.HasPrefix(name, prefix)
	})
}

// Deployable returns the deployable called name, or false.
func (w *Workspace) Deployable(name string) (Deployable, bool) {
	i := slices.IndexFunc(w.Deployables, func(d Deployable) bool { return d.Name == name })
	if i < 0 {
		return Deployable{}, false
	}
	return w.Deployables[i], true
}

// DeployableOf returns the deployable whose module directory is module (the Dockerfile's
// MODULE build argument), or false.
func (w *Workspace) DeployableOf(module string) (Deployable, bool) {
	i := slices.IndexFunc(w.Deployables, func(d Deployable) bool { return d.Module == module })
	if i < 0 {
		return Deployable{}, false
	}
	return w.Deployables[i], true
}

// LoadWorkspace reads the workspace at root: go.work's modules, the deployables among them,
// their listen ports and the variables they read. It runs `go list` once, so it needs the Go
// toolchain and the module cache.
func LoadWorkspace(root string) (*Workspace, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	w := &Workspace{Root: root}
	for _, u := range wf.Use {
		w.Modules = append(w.Modules, path.Clean(filepath.ToSlash(u.Path)))
	}
	for _, mod := range w.Modules {
		ds, err := deployablesIn(root, mod)
		if err != nil {
			return nil, err
		}
		w.Deployables = append(w.Deployables, ds...)
	}
	slices.SortFunc(w.Deployables, func(a, b Deployable) int { return strings.Compare(a.Name, b.Name) })
	if err := w.readEnv(); err != nil {
		return nil, err
	}
	return w, nil
}

// deployablesIn finds the deployables of the module at mod: cmd/<name>/main.go calling
// server.Exec, with the ports of the module's `var Spec = server.Spec{...}`.
func deployablesIn(root, mod string) ([]Deployable, error) {
	mains, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(mod), "cmd", "*", "main.go"))
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	var out []Deployable
	for _, m := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), m, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		if !callsExec(f) {
			continue
		}
		name := filepath.Base(filepath.Dir(m))
		d := Deployable{Name: name, Module: mod, Main: "./" + path.Join(mod, "cmd", name)}
		if d.HTTPPort, d.GRPCPort, d.Edge, err = specPorts(filepath.Join(root, filepath.FromSlash(mod))); err != nil {
			return nil, fmt.Errorf("workspace: %s: %w", d.Main, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// callsExec reports whether f calls server.Exec (the platform's process entry point).
func callsExec(f *ast.File) bool {
	local := importName(f, "boxoffice.dev/platform/server")
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && isPkgCall(call, local, "Exec") {
			found = true
		}
		return !found
	})
	return found
}

// specPorts reads the ports of `var Spec = server.Spec{HTTPAddr: ":8102", GRPCAddr: ":9102"}`
// in the package at dir, and whether it says `Edge: true`.
func specPorts(dir string) (httpPort, grpcPort int, edge bool, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, 0, false, err
	}
	fields := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, 0, false, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "Spec" || len(vs.Values) != 1 {
				return true
			}
			lit, ok := vs.Values[0].(*ast.CompositeLit)
			if !ok {
				return true
			}
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok {
						fields[k.Name], _ = stringLit(kv.Value)
						if v, ok := kv.Value.(*ast.Ident); ok && v.Name == "true" {
							fields[k.Name] = "true"
						}
					}
				}
			}
			return false
		})
	}
	if fields["HTTPAddr"] == "" {
		return 0, 0, false, fmt.Errorf("no `var Spec = server.Spec{HTTPAddr: ...}` with a literal address in %s", dir)
	}
	if httpPort, err = addrPort(fields["HTTPAddr"]); err != nil {
		return 0, 0, false, err
	}
	if fields["GRPCAddr"] != "" {
		if grpcPort, err = addrPort(fields["GRPCAddr"]); err != nil {
			return 0, 0, false, err
		}
	}
	return httpPort, grpcPort, fields["Edge"] == "true", nil
}

func addrPort(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}

// listedPackage is one line of readEnv's `go list`.
type listedPackage struct {
	importPath string
	dir        string
	files      []string
	deps       []string
}

// readEnv fills each deployable's Env, UsesDB and UsesRedis from its source and that of every
// boxoffice.dev package it imports, directly or not.
func (w *Workspace) readEnv() error {
	if len(w.Deployables) == 0 {
		return nil
	}
	// -e: a package that does not build is still listed; building is not this check's job.
	args := []string{"list", "-e", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}\t{{join .Deps \",\"}}"}
	for _, d := range w.Deployables {
		args = append(args, d.Main)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = w.Root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	pkgs := map[string]listedPackage{}
	var byDir = map[string]string{} // package dir → import path, to find each main's package
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return fmt.Errorf("go list: unexpected line %q", line)
		}
		p := listedPackage{importPath: f[0], dir: f[1], files: splitList(f[2]), deps: splitList(f[3])}
		pkgs[p.importPath] = p
		byDir[p.dir] = p.importPath
	}
	scanned := map[string]packageScan{}
	scan := func(p listedPackage) (packageScan, error) {
		if s, ok := scanned[p.importPath]; ok {
			return s, nil
		}
		s, err := scanPackage(w.Root, p.dir, p.files)
		scanned[p.importPath] = s
		return s, err
	}
	for i := range w.Deployables {
		d := &w.Deployables[i]
		main, ok := pkgs[byDir[filepath.Join(w.Root, filepath.FromSlash(d.Main))]]
		if !ok {
			return fmt.Errorf("go list: %s not listed", d.Main)
		}
		moduleDir := filepath.Join(w.Root, filepath.FromSlash(d.Module)) + string(filepath.Separator)
		for _, ip := range append([]string{main.importPath}, main.deps...) {
			p, ok := pkgs[ip]
			if !ok || !strings.HasPrefix(ip, "boxoffice.dev/") {
				continue
			}
			s, err := scan(p)
			if err != nil {
				return err
			}
			d.Env = append(d.Env, s.env...)
			// Only the deployable's own module says whether it uses a store: the platform
			// offers both to everyone.
			if strings.HasPrefix(p.dir+string(filepath.Separator), moduleDir) {
				d.UsesDB = d.UsesDB || s.usesDB
				d.UsesRedis = d.UsesRedis || s.usesRedis
			}
		}
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
