package deploycheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/version"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// Dockerfile is what the checks read from the Dockerfile: the Go version of the build
// stage, its `go build` line, and the runtime stage.
type Dockerfile struct {
	GoVersion  string    // the GO_VERSION build argument's default, e.g. "1.26.8"
	Build      BuildLine // the `go build` of the build stage
	Binary     string    // the file of Build.Out the image runs, before expansion: /out/${MODULE##*/}
	Runtime    string    // the last stage's base image
	User       string    // the last stage's USER
	Entrypoint []string  // the last stage's ENTRYPOINT (exec form)
	Copied     []string  // what the last stage copies in: destination paths
}

// BuildLine is one `go build` command as written in a RUN instruction, before the shell
// expands $MODULE.
type BuildLine struct {
	Env      []string // assignments before `go`, e.g. CGO_ENABLED=0
	Flags    []string // build flags, e.g. -trimpath, -ldflags=-s -w
	Out      string   // the -o directory
	Packages []string // e.g. ./${MODULE}/cmd/${MODULE##*/} ./cmd/healthcheck
}

// Expand returns s with MODULE set to module: ${MODULE}, $MODULE and the shell's
// ${MODULE##*/} (its last path element) are the forms the Dockerfile uses.
func Expand(s, module string) string {
	return os.Expand(s, func(name string) string {
		switch name {
		case "MODULE":
			return module
		case "MODULE##*/":
			return path.Base(module)
		}
		return "$" + name
	})
}

// ParseDockerfile reads the Dockerfile at file.
func ParseDockerfile(file string) (*Dockerfile, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("dockerfile: %w", err)
	}
	df := &Dockerfile{}
	build := false
	for _, in := range instructions(string(data)) {
		keyword, rest, _ := strings.Cut(in, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(keyword) {
		case "ARG":
			if v, ok := strings.CutPrefix(rest, "GO_VERSION="); ok {
				df.GoVersion = v
			}
		case "FROM":
			df.Runtime, _, _ = strings.Cut(rest, " ")
			df.User, df.Entrypoint, df.Copied = "", nil, nil
		case "USER":
			df.User = rest
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &df.Entrypoint); err != nil {
				return nil, fmt.Errorf("dockerfile: ENTRYPOINT %s: want the exec form [\"...\"]: %w", rest, err)
			}
		case "COPY":
			words := shellWords(rest)
			if len(words) > 0 {
				dest := words[len(words)-1]
				for _, src := range words[:len(words)-1] {
					if !strings.HasPrefix(src, "--") {
						df.Copied = append(df.Copied, path.Join(dest, path.Base(src)))
					}
				}
			}
		case "RUN":
			for cmd := range strings.SplitSeq(rest, "&&") {
				if w := shellWords(cmd); len(w) == 3 && w[0] == "mv" {
					df.Binary = w[1]
				}
				if b, ok := parseGoBuild(cmd); ok {
					if build {
						return nil, errors.New("dockerfile: more than one `go build`; the checks expect one")
					}
					df.Build, build = b, true
				}
			}
		}
	}
	if !build {
		return nil, errors.New("dockerfile: no RUN with `go build`")
	}
	return df, nil
}

// instructions returns the Dockerfile's instructions, each on one line: comments dropped and
// continued lines (ending in \) joined.
func instructions(src string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(src, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") || t == "" && cur.Len() == 0 {
			continue
		}
		if s, ok := strings.CutSuffix(t, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// parseGoBuild reads one shell command of a RUN; ok is false unless it is `go build`.
// Mount flags of RUN itself (--mount=...) come before the command and are skipped.
func parseGoBuild(cmd string) (BuildLine, bool) {
	words := shellWords(cmd)
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		words = words[1:]
	}
	var b BuildLine
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		b.Env, words = append(b.Env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		return BuildLine{}, false
	}
	for i := 2; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-o" && i+1 < len(words):
			b.Out, i = words[i+1], i+1
		case strings.HasPrefix(w, "-"):
			b.Flags = append(b.Flags, w)
		default:
			b.Packages = append(b.Packages, w)
		}
	}
	return b, true
}

// shellWords splits s into words as sh does for plain words and quoted strings; it knows no
// expansion, which Expand does afterwards.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// CheckDockerfile checks the Dockerfile against the workspace: its Go is recent enough for
// go.work; its `go build` is static (CGO_ENABLED=0), reproducible (-trimpath) and, for every
// deployable's MODULE, builds that deployable's main package and the healthcheck; the
// runtime image is distroless or scratch, runs as a non-root user and starts the service.
func CheckDockerfile(w *Workspace, df *Dockerfile) error {
	var errs []error
	data, err := os.ReadFile(filepath.Join(w.Root, "go.work"))
	if err != nil {
		return err
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return err
	}
	if wf.Go == nil || version.Compare("go"+df.GoVersion, "go"+wf.Go.Version) < 0 {
		errs = append(errs, fmt.Errorf("GO_VERSION=%s is older than go.work's go %v", df.GoVersion, wf.Go))
	}
	b := df.Build
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		errs = append(errs, fmt.Errorf("go build runs without CGO_ENABLED=0 (env %q): the binary would need a C library the runtime image lacks", b.Env))
	}
	if !slices.Contains(b.Flags, "-trimpath") {
		errs = append(errs, errors.New("go build runs without -trimpath: the binary would embed the builder's paths"))
	}
	for _, d := range w.Deployables {
		got := make([]string, len(b.Packages))
		for i, p := range b.Packages {
			got[i] = Expand(p, d.Module)
		}
		if !slices.Contains(got, d.Main) {
			errs = append(errs, fmt.Errorf("go build with MODULE=%s builds %q, not %s", d.Module, got, d.Main))
		}
	}
	if !slices.Contains(b.Packages, healthcheckMain) {
		errs = append(errs, fmt.Errorf("go build builds %q, not %s (the container healthcheck)", b.Packages, healthcheckMain))
	}
	if !strings.HasPrefix(df.Runtime, "gcr.io/distroless/static") && df.Runtime != "scratch" {
		errs = append(errs, fmt.Errorf("runtime image %s: want gcr.io/distroless/static (or scratch): no shell, no package manager", df.Runtime))
	}
	uid, _, _ := strings.Cut(df.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		errs = append(errs, fmt.Errorf("runtime USER %q: want a numeric, non-root user (Kubernetes' runAsNonRoot checks the number)", df.User))
	}
	if !slices.Contains(df.Copied, healthcheckBin) {
		errs = append(errs, fmt.Errorf("runtime image has no %s (copied: %q)", healthcheckBin, df.Copied))
	}
	if len(df.Entrypoint) == 0 || !slices.Contains(df.Copied, df.Entrypoint[0]) {
		errs = append(errs, fmt.Errorf("ENTRYPOINT %q is not a binary the runtime stage copies in (%q)", df.Entrypoint, df.Copied))
	}
	return errors.Join(errs...)
}

// Command returns the Dockerfile's `go build`, as written, run for every deployable at once
// into dir: the same environment and flags, every deployable's expanded packages in one
// invocation (the build cache is shared), from the workspace root.
func (b BuildLine) Command(w *Workspace, dir string) *exec.Cmd {
	args := append([]string{"build"}, b.Flags...)
	args = append(args, "-o", dir+string(filepath.Separator))
	var pkgs []string
	for _, d := range w.Deployables {
		for _, p := range b.Packages {
			if p = Expand(p, d.Module); !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = w.Root
	cmd.Env = append(os.Environ(), b.Env...)
	return cmd
}
