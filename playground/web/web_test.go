package web_test

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	"boxoffice.dev/playground/web"
)

// references finds what a page or module loads: src and href attributes, ES module imports,
// and fetches of literal paths.
var references = regexp.MustCompile(`(?:src|href)="([^"#]+)"|from "([^"]+)"|fetch\(` + "`" + `([^$` + "`" + `]+)`)

// TestEverythingLoadedIsEmbedded holds the pages to what the binary carries: every file a page
// or module references is embedded, and none reaches outside (the playground must work
// offline, in a classroom without network).
func TestEverythingLoadedIsEmbedded(t *testing.T) {
	for _, name := range []string{"index.html", "lab.html", "runner.js", "lab.js", "charts.js", "api.js", "dom.js"} {
		t.Run(name, func(t *testing.T) {
			b, err := fs.ReadFile(web.Files, name)
			if err != nil {
				t.Fatalf("%s is not embedded: %v", name, err)
			}
			text := string(b)
			if i := strings.Index(text, "://"); i >= 0 {
				t.Errorf("%s names an external URL near %q; everything must be embedded", name, text[max(0, i-20):min(len(text), i+30)])
			}
			found := 0
			for _, m := range references.FindAllStringSubmatch(text, -1) {
				ref := m[1] + m[2] + m[3]
				if ref == "./" || strings.HasPrefix(ref, "api/") {
					continue // the page itself, and the JSON API
				}
				found++
				file := path.Clean(path.Join(path.Dir(name), ref))
				if _, err := fs.Stat(web.Files, file); err != nil {
					t.Errorf("%s references %q, which is not embedded (%v)", name, ref, err)
				}
			}
			if strings.HasSuffix(name, ".html") && found < 3 {
				t.Errorf("%s references %d files, want its style sheets and module at least", name, found)
			}
		})
	}
}

// TestVendoredUPlotIsTheRecordedVersion keeps VENDORED.md true: the version it records is the
// one in the vendored file's banner, and the licence travels with it.
func TestVendoredUPlotIsTheRecordedVersion(t *testing.T) {
	js, err := fs.ReadFile(web.Files, "vendor/uplot/uPlot.esm.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`uPlot \(v(\d+\.\d+\.\d+)\)`).FindSubmatch(js[:min(len(js), 400)])
	if m == nil {
		t.Fatal("uPlot.esm.js has no version banner")
	}
	notes, err := fs.ReadFile(web.Files, "vendor/VENDORED.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "| uPlot | " + string(m[1]) + " |"; !strings.Contains(string(notes), want) {
		t.Errorf("VENDORED.md does not record uPlot %s (want a row starting %q)", m[1], want)
	}
	if lic, err := fs.ReadFile(web.Files, "vendor/uplot/LICENSE"); err != nil || !strings.Contains(string(lic), "MIT License") {
		t.Errorf("vendor/uplot/LICENSE = %v, want the MIT licence embedded beside the code", err)
	}
}
