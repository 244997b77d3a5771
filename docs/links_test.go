package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCodeLinks checks every relative link in docs/**/*.md and the repository's README.md:
// the file it names exists and, when the link names a symbol after '#', the symbol is
// declared there. The syntax is documented at the top of docs/README.md.
func TestCodeLinks(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	c := newLinkChecker(root)
	checked := 0
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			problems, n := c.check(f)
			checked += n
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
	// The docs link to code on every page; finding none means the scan is broken.
	if checked < 50 {
		t.Errorf("checked %d links in %d files, want at least 50", checked, len(files))
	}
}

// TestLinkCheckerFixtures holds the checker to each rule on fixtures in testdata/links,
// broken links included: a checker that passes everything would fail here.
func TestLinkCheckerFixtures(t *testing.T) {
	root := repoRoot(t)
	const dir = "docs/testdata/links/"
	tests := []struct {
		name  string
		file  string
		links int // checked, external ones left out
		want  []string
	}{
		{"every kind of valid link", "valid.md", 22, nil},
		{"links in code are not links", "code.md", 0, nil},
		{"a missing file", "missing-file.md", 2, []string{
			dir + "missing-file.md:3: nowhere.go#New: no such file or directory",
			dir + "missing-file.md:5: ../links/gone/: no such file or directory",
		}},
		{"a missing symbol", "missing-symbol.md", 4, []string{
			dir + "missing-symbol.md:3: decls.go#Missing: Missing is not declared in " + dir + "decls.go",
			dir + "missing-symbol.md:4: decls.go#Rule.Missing: Rule.Missing is not declared in " + dir + "decls.go",
			dir + "missing-symbol.md:5: decls.go#Allow: Allow is not declared in " + dir + "decls.go",
			dir + "missing-symbol.md:6: decls.go#L12: L12 is not declared in " + dir + "decls.go",
		}},
		{"a missing anchor or text", "missing-anchor.md", 3, []string{
			dir + "missing-anchor.md:3: valid.md#no-such-heading: no heading of " + dir + "valid.md has the anchor no-such-heading",
			dir + "missing-anchor.md:4: #nor-here: no heading of " + dir + "missing-anchor.md has the anchor nor-here",
			dir + "missing-anchor.md:5: script.lua#algorithms.nope: " + dir + "script.lua does not contain algorithms.nope",
		}},
		{"paths that leave the repository or are absolute", "outside.md", 4, []string{
			dir + "outside.md:3: ../../../../elsewhere.md: leaves the repository",
			dir + "outside.md:4: /gateway/run.go: absolute; write the path relative to this file",
			dir + "outside.md:5: ./#Rule: a symbol needs a file, not a folder",
			dir + "outside.md:6: : empty link",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := newLinkChecker(root).check(dir + tt.file)
			if !slices.Equal(got, tt.want) {
				t.Errorf("check(%s) =\n%s\nwant\n%s", tt.file, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if n != tt.links {
				t.Errorf("check(%s) checked %d links, want %d", tt.file, n, tt.links)
			}
		})
	}
}

// TestLinkSyntaxExamples checks the examples of the link syntax at the top of docs/README.md
// (a markdown block, which TestCodeLinks skips as code): the documented syntax must work.
func TestLinkSyntaxExamples(t *testing.T) {
	root := repoRoot(t)
	c := newLinkChecker(root)
	readme, err := c.document("docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples *fence
	for i, f := range readme.fences {
		if f.info == "markdown" {
			examples = &readme.fences[i]
			break
		}
	}
	if examples == nil {
		t.Fatal("docs/README.md has no markdown block of link examples")
	}
	problems, n := c.checkLinks("docs/README.md", parseDocument(examples.text).links)
	for _, p := range problems {
		t.Error(p)
	}
	if n < 5 {
		t.Errorf("the examples hold %d links, want one of each kind: 5", n)
	}
}

// linkChecker checks the links of markdown files against the repository at root, caching
// what it parsed of each target.
type linkChecker struct {
	root    string
	symbols map[string]map[string]bool // Go file → declared names
	docs    map[string]document        // markdown file → parsed
}

func newLinkChecker(root string) *linkChecker {
	return &linkChecker{root: root, symbols: map[string]map[string]bool{}, docs: map[string]document{}}
}

// scheme matches a link with a URL scheme (https:, mailto:): not a path into the repository.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// check returns one line per broken link of file (a slash path from the root), and how many
// links it checked.
func (c *linkChecker) check(file string) (problems []string, checked int) {
	doc, err := c.document(file)
	if err != nil {
		return []string{err.Error()}, 0
	}
	return c.checkLinks(file, doc.links)
}

// checkLinks checks links as written in file.
func (c *linkChecker) checkLinks(file string, links []link) (problems []string, checked int) {
	for _, l := range links {
		if scheme.MatchString(l.target) {
			continue // external: not checked, the test runs offline
		}
		checked++
		if err := c.resolve(file, l.target); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %v", file, l.line, l.target, err))
		}
	}
	return problems, checked
}

// resolve checks one link target of file.
func (c *linkChecker) resolve(file, target string) error {
	if target == "" {
		return fmt.Errorf("empty link")
	}
	p, frag, _ := strings.Cut(target, "#")
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("absolute; write the path relative to this file")
	}
	p, err := url.PathUnescape(p)
	if err != nil {
		return fmt.Errorf("path: %w", err)
	}
	rel := file // "#anchor" alone points into file itself
	if p != "" {
		rel = path.Join(path.Dir(file), p)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("leaves the repository")
	}
	info, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("no such file or directory")
	}
	switch {
	case frag == "" && p != "":
		return nil
	case info.IsDir():
		return fmt.Errorf("a symbol needs a file, not a folder")
	case strings.HasSuffix(rel, ".go"):
		return c.goSymbol(rel, frag)
	case strings.HasSuffix(rel, ".md"):
		return c.anchor(rel, frag)
	}
	data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), frag) {
		return fmt.Errorf("%s does not contain %s", rel, frag)
	}
	return nil
}

// goSymbol checks that file declares name: a func, type, const or var ("Failsafe"), a method
// or a field or interface method of a type ("Failsafe.Allow", "Rule.Burst").
func (c *linkChecker) goSymbol(file, name string) error {
	decls, ok := c.symbols[file]
	if !ok {
		var err error
		if decls, err = declarations(filepath.Join(c.root, filepath.FromSlash(file))); err != nil {
			return err
		}
		c.symbols[file] = decls
	}
	if !decls[name] {
		return fmt.Errorf("%s is not declared in %s", name, file)
	}
	return nil
}

// anchor checks that a heading of the markdown file has the anchor name.
func (c *linkChecker) anchor(file, name string) error {
	doc, err := c.document(file)
	if err != nil {
		return err
	}
	if !doc.anchors[name] {
		return fmt.Errorf("no heading of %s has the anchor %s", file, name)
	}
	return nil
}

func (c *linkChecker) document(file string) (document, error) {
	if doc, ok := c.docs[file]; ok {
		return doc, nil
	}
	data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(file)))
	if err != nil {
		return document{}, err
	}
	doc := parseDocument(string(data))
	c.docs[file] = doc
	return doc, nil
}

// declarations lists the names a Go file declares at top level, with methods, struct fields
// and interface methods as "Type.Name".
func declarations(file string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				names[d.Name.Name] = true
			} else if recv := typeName(d.Recv.List[0].Type); recv != "" {
				names[recv+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
					for _, m := range members(s.Type) {
						names[s.Name.Name+"."+m] = true
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names, nil
}

// typeName is the name of a method's receiver type: *Pools → Pools, cache[K, V] → cache.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.ParenExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	}
	return ""
}

// members are a struct's fields (embedded ones by their type's name) or an interface's
// methods.
func members(e ast.Expr) []string {
	var list *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
		if len(f.Names) == 0 {
			if sel, ok := f.Type.(*ast.SelectorExpr); ok {
				out = append(out, sel.Sel.Name)
			} else if n := typeName(f.Type); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// repoRoot is the repository root: the parent of docs/, where go.work is.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatalf("repository root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root %s has no go.work: %v", root, err)
	}
	return root
}

// markdownFiles lists the checked markdown files as slash paths from the root: README.md
// and every .md under docs/, except fixtures (testdata) and installed packages (node_modules).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list markdown files: %v", err)
	}
	return files
}

// TestScenarioLessonsExist checks the other direction: each scenario names its lesson page
// ("docs: docs/lessons/rate-limiting.md" in scenarios/*.yaml), and the page must exist.
func TestScenarioLessonsExist(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no scenarios yet")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		page := ""
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "docs:"); ok {
				page = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
		switch {
		case page == "":
			t.Errorf("scenarios/%s names no lesson (docs: docs/lessons/<page>.md)", name)
		case !strings.HasPrefix(page, "docs/") || !strings.HasSuffix(page, ".md"):
			t.Errorf("scenarios/%s: docs: %s, want a page under docs/", name, page)
		default:
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(page))); err != nil {
				t.Errorf("scenarios/%s: docs: %s does not exist", name, page)
			}
		}
	}
}
