package deploycheck

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLineEndings: the repository's .gitattributes keeps LF line endings for every file a
// container or a Linux machine gets from the checkout (LinuxFiles).
func TestLineEndings(t *testing.T) {
	w := loadWorkspace(t)
	p, err := LoadCompose(context.Background(), w.Root, "docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	files, err := LinuxFiles(w.Root, filepath.Join(w.Root, "deploy", "k8s"), p)
	if err != nil {
		t.Fatalf("LinuxFiles = %v", err)
	}
	for _, want := range []string{
		"deploy/compose/postgres-init.sh",            // a compose mount
		"deploy/compose/nginx.conf",                  // another
		"scenarios/k6/retry-storm.js",                // a file of a mounted directory
		"deploy/k8s/overlays/local/postgres-init.sh", // a ConfigMap's
		"deploy/k8s/base/gateway-policy.yaml",        // another
		"Dockerfile",
		".ci/run", // a script without an extension
	} {
		if !slices.Contains(files, want) {
			t.Errorf("LinuxFiles = %q, want it to include %s", files, want)
		}
	}
	if err := CheckLineEndings(w.Root, files); err != nil {
		t.Error(err)
	}
}

// TestLineEndingsBroken: a .gitattributes that leaves a file out, or none at all, is reported.
func TestLineEndingsBroken(t *testing.T) {
	tests := []struct {
		name, gitattributes, want string
	}{
		{"no .gitattributes", "", "no such file"},
		{"only shell scripts", "*.sh text eol=lf\n", ".gitattributes does not keep LF line endings (text eol=lf) for deploy/compose/nginx.conf, .ci/run, which"},
		{"overridden later", "* text eol=lf\n*.conf -text\n", "for deploy/compose/nginx.conf, which"},
		{"eol unset again", "* text eol=lf\n/deploy/** !eol\n", "for deploy/compose/nginx.conf, deploy/compose/postgres-init.sh, which"},
	}
	files := []string{"deploy/compose/nginx.conf", "deploy/compose/postgres-init.sh", ".ci/run"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.gitattributes != "" {
				if err := os.WriteFile(filepath.Join(root, ".gitattributes"), []byte(tt.gitattributes), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := CheckLineEndings(root, files); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckLineEndings(%q) = %v, want an error containing %q", tt.gitattributes, err, tt.want)
			}
		})
	}
}

// TestMatchAttrPattern holds the pattern rules to git's (gitattributes(5), which takes them
// from gitignore(5)).
func TestMatchAttrPattern(t *testing.T) {
	tests := []struct {
		pattern, file string
		want          bool
	}{
		{"*.sh", "postgres-init.sh", true},
		{"*.sh", "deploy/compose/postgres-init.sh", true}, // no slash: the base name, at any depth
		{"*.sh", "deploy/compose/nginx.conf", false},
		{"Dockerfile", "services/x/Dockerfile", true},
		{"/Dockerfile", "services/x/Dockerfile", false}, // a slash anchors it at the root
		{"/Dockerfile", "Dockerfile", true},
		{"deploy/*.conf", "deploy/compose/nginx.conf", false}, // * stays within a directory
		{"deploy/compose/*", "deploy/compose/nginx.conf", true},
		{"/deploy/compose/**", "deploy/compose/grafana/dashboards/gateway.json", true},
		{"/deploy/compose/**", "deploy/composer/x", false},
		{"**/k6/*.js", "scenarios/k6/retry-storm.js", true},
		{"scenarios/**/*.js", "scenarios/k6/retry-storm.js", true},
		{"scenarios/**/*.js", "scenarios/retry-storm.js", true}, // ** matches no directory too
		{"/.ci/run", ".ci/run", true},
	}
	for _, tt := range tests {
		if got := matchAttrPattern(tt.pattern, tt.file); got != tt.want {
			t.Errorf("matchAttrPattern(%q, %q) = %v, want %v", tt.pattern, tt.file, got, tt.want)
		}
	}
}
