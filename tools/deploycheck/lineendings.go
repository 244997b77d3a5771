package deploycheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// LinuxFiles returns the files of the checkout at root that run or are read as written on
// Linux, as slash paths from root, sorted: every file compose bind-mounts into a container
// (each file of a mounted directory), every file a kustomization under k8sDir puts in a
// ConfigMap or Secret, the Dockerfile, and every file that starts with "#!" (a script run by
// its interpreter). A checkout that turns their line endings into CRLF (Windows, with
// core.autocrlf) breaks them: a shell script fails on "\r".
func LinuxFiles(root, k8sDir string, p *types.Project) ([]string, error) {
	var files []string
	add := func(abs string) error {
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil // outside the checkout: not ours to keep
		}
		return filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
			return nil
		})
	}
	for _, name := range serviceNames(p) {
		for _, v := range p.Services[name].Volumes {
			if v.Type == types.VolumeTypeBind {
				if err := add(v.Source); err != nil {
					return nil, fmt.Errorf("service %s: %w", name, err)
				}
			}
		}
	}
	generated, err := generatorFiles(k8sDir)
	if err != nil {
		return nil, err
	}
	for _, f := range append(generated, filepath.Join(root, "Dockerfile")) {
		if err := add(f); err != nil {
			return nil, err
		}
	}
	scripts, err := scriptFiles(root)
	if err != nil {
		return nil, err
	}
	files = append(files, scripts...)
	slices.Sort(files)
	return slices.Compact(files), nil
}

// generatorFiles returns the files that the configMapGenerator and secretGenerator of every
// kustomization.yaml under dir read (files: key=path or path, and envs:).
func generatorFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		type generator struct {
			Files []string `yaml:"files"`
			Envs  []string `yaml:"envs"`
		}
		var k struct {
			ConfigMaps []generator `yaml:"configMapGenerator"`
			Secrets    []generator `yaml:"secretGenerator"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, g := range append(k.ConfigMaps, k.Secrets...) {
			for _, f := range append(g.Files, g.Envs...) {
				if i := strings.Index(f, "="); i >= 0 {
					f = f[i+1:]
				}
				out = append(out, filepath.Join(filepath.Dir(p), filepath.FromSlash(f)))
			}
		}
		return nil
	})
	return out, err
}

// scriptFiles returns the files under root that start with "#!", as slash paths from root,
// leaving out Git's own directory, installed packages (node_modules) and local data
// (.boxoffice).
func scriptFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == ".boxoffice" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		head := make([]byte, 2)
		n, _ := f.Read(head)
		f.Close()
		if n == 2 && string(head) == "#!" {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// CheckLineEndings checks that the .gitattributes at root gives every one of files (slash
// paths from root) eol=lf, so that every checkout keeps its LF line endings, whatever
// core.autocrlf says. It returns one error naming all the files it leaves out.
func CheckLineEndings(root string, files []string) error {
	data, err := os.ReadFile(filepath.Join(root, ".gitattributes"))
	if err != nil {
		return fmt.Errorf("line endings: %w", err)
	}
	rules, err := parseGitAttributes(data)
	if err != nil {
		return fmt.Errorf(".gitattributes: %w", err)
	}
	var missing []string
	for _, f := range files {
		if eol := attribute(rules, f, "eol"); eol != "lf" || attribute(rules, f, "text") == unset {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf(".gitattributes does not keep LF line endings (text eol=lf) for %s, which run on Linux as written: a Windows checkout with core.autocrlf would turn them into CRLF", strings.Join(missing, ", "))
	}
	return nil
}

// attrRule is one line of a .gitattributes file: a pattern and the attributes it sets. An
// attribute's value is "set" (text), unset (-text), a value (eol=lf), or "" for !attr (back
// to unspecified).
type attrRule struct {
	pattern string
	attrs   map[string]string
}

const unset = "-"

// parseGitAttributes reads a .gitattributes file. Macros other than binary, and patterns git
// would not apply to a file (a negation, a trailing slash), are errors: the checks that use
// it would otherwise read it differently from git.
func parseGitAttributes(data []byte) ([]attrRule, error) {
	var rules []attrRule
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		pattern := fields[0]
		if strings.HasPrefix(pattern, "!") || strings.HasSuffix(pattern, "/") || strings.HasPrefix(pattern, `"`) || strings.HasPrefix(pattern, "[attr]") {
			return nil, fmt.Errorf("line %d: pattern %q: use a plain pattern (no negation, trailing slash, quotes or macro)", n, pattern)
		}
		r := attrRule{pattern: pattern, attrs: map[string]string{}}
		for _, a := range fields[1:] {
			switch {
			case a == "binary": // the built-in macro
				r.attrs["text"], r.attrs["diff"], r.attrs["merge"] = unset, unset, unset
			case strings.HasPrefix(a, "-"):
				r.attrs[a[1:]] = unset
			case strings.HasPrefix(a, "!"):
				r.attrs[a[1:]] = ""
			case strings.Contains(a, "="):
				k, v, _ := strings.Cut(a, "=")
				r.attrs[k] = v
			default:
				r.attrs[a] = "set"
			}
		}
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

// attribute returns the value rules give attr for file (a slash path from the root): the last
// matching line that says anything about attr decides, as in git. "" means unspecified.
func attribute(rules []attrRule, file, attr string) string {
	for i := len(rules) - 1; i >= 0; i-- {
		v, ok := rules[i].attrs[attr]
		if ok && matchAttrPattern(rules[i].pattern, file) {
			return v
		}
	}
	return ""
}

// matchAttrPattern reports whether a .gitattributes pattern matches file, as git does for a
// file at the root's .gitattributes: a pattern without a slash matches the base name at any
// depth; one with a slash matches the path from the root, where "*" stays within one
// directory and a "**" segment matches any number of them.
func matchAttrPattern(pattern, file string) bool {
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(file))
		return ok
	}
	return matchSegments(strings.Split(strings.TrimPrefix(pattern, "/"), "/"), strings.Split(file, "/"))
}

func matchSegments(pattern, file []string) bool {
	switch {
	case len(pattern) == 0:
		return len(file) == 0
	case pattern[0] == "**":
		for i := 0; i <= len(file); i++ {
			if matchSegments(pattern[1:], file[i:]) {
				return true
			}
		}
		return false
	case len(file) == 0:
		return false
	}
	ok, _ := path.Match(pattern[0], file[0])
	return ok && matchSegments(pattern[1:], file[1:])
}
