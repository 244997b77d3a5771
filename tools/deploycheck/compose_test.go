package deploycheck

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"boxoffice.dev/services/waitroom/pass"
)

func TestCompose(t *testing.T) {
	w := loadWorkspace(t)
	p, err := LoadCompose(context.Background(), w.Root, "docker-compose.yml")
	if err != nil {
		t.Fatalf("LoadCompose = %v", err)
	}
	if err := CheckCompose(w, p); err != nil {
		t.Errorf("CheckCompose(docker-compose.yml) = %v", err)
	}
}

func TestComposeBroken(t *testing.T) {
	w := loadWorkspace(t)
	tests := []struct {
		name, fixture, want string
	}{
		{"service removed", "no-search.yml", "deployable search (./services/search/cmd/search) runs in no compose service"},
		{"healthcheck dropped", "no-healthcheck.yml", "service inventory-1: no healthcheck"},
		{"dependent of a service without healthcheck", "no-healthcheck.yml", "service order-1: depends on inventory-1 being healthy, which has no healthcheck"},
		{"required variable missing", "missing-env.yml", "service waitroom: REDIS_URL is not set: its module uses Redis"},
		{"variable nothing reads", "misspelt-env.yml", "service order-1: sets PAYMENT_GRPC_ADR, which order does not read"},
		{"address at the wrong port", "wrong-port.yml", "service order-2: PAYMENT_GRPC_ADDR=payment:8107: payment listens on 9107, not 8107"},
		{"address of the wrong deployable", "wrong-target.yml", "service gateway-1: UPSTREAM_SEARCH=http://catalog-1:8102 names catalog-1, which does not run search"},
		{"port published", "published-redis.yml", "service redis: publishes port 6379"},
		{"dependency only started", "started-only.yml", `service search: depends on catalog-1 with condition "service_started"`},
		{"over the memory budget", "over-budget.yml", "above the budget of 2048 MiB"},
		{"edge not trusted", "untrusted-edge.yml", `service gateway-2: TRUSTED_PROXIES="10.0.0.0/24" does not include the edge's address 10.213.0.250`},
		{"playground not trusted", "untrusted-playground.yml", `service gateway-1: TRUSTED_PROXIES="10.213.0.250" does not include the address of playground (10.213.0.251)`},
		{"database shared", "shared-database.yml", `service payment: DATABASE_URL names database "order", want "payment"`},
		{"image not pinned", "unpinned-image.yml", `service redis: image "redis:latest" is not pinned`},
		{"GOMEMLIMIT above the limit", "gomemlimit-too-high.yml", "service notification: GOMEMLIMIT=64MiB is not below its memory limit of 48 MiB"},
		{"image built twice", "built-twice.yml", "image boxoffice/catalog:dev is built by services catalog-1, catalog-2"},
		{"replica pulls the built image", "replica-pulls.yml", `service order-2: runs boxoffice/order:dev, which order-1 builds, with pull_policy "missing": want never`},
		{"pg_isready over the socket", "pg-isready-socket.yml", `service postgres: healthcheck "pg_isready -U boxoffice -d postgres" asks PostgreSQL over its Unix socket`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadCompose(context.Background(), w.Root, "docker-compose.yml", "tools/deploycheck/testdata/compose/"+tt.fixture)
			if err != nil {
				t.Fatalf("LoadCompose = %v", err)
			}
			err = CheckCompose(w, p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckCompose(+%s) = %v, want an error containing %q", tt.fixture, err, tt.want)
			}
		})
	}
}

// TestComposeWaitroomKeys: inventory verifies admission passes with the public half of the key
// the waitroom signs them with; a mismatch would refuse every fan the waiting room admits.
func TestComposeWaitroomKeys(t *testing.T) {
	w := loadWorkspace(t)
	p, err := LoadCompose(context.Background(), w.Root, "docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	gs, errs := goServices(w, p)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var signers []ed25519.PrivateKey
	var verifiers []string
	for _, s := range gs {
		if v, ok := s.env("WAITROOM_SIGNING_KEY"); ok {
			k, err := pass.ParsePrivateKey(v)
			if err != nil {
				t.Fatalf("service %s: WAITROOM_SIGNING_KEY: %v", s.Name, err)
			}
			signers = append(signers, k)
		}
		if v, ok := s.env("WAITROOM_PUBLIC_KEY"); ok {
			verifiers = append(verifiers, s.Name+"="+v)
		}
	}
	if len(signers) == 0 || len(verifiers) == 0 {
		t.Fatalf("found %d signing keys and %d public keys, want both", len(signers), len(verifiers))
	}
	for _, sk := range signers {
		want := pass.EncodePublicKey(sk.Public().(ed25519.PublicKey))
		for _, v := range verifiers {
			name, key, _ := strings.Cut(v, "=")
			pk, err := pass.ParsePublicKey(key)
			if err != nil {
				t.Fatalf("service %s: WAITROOM_PUBLIC_KEY: %v", name, err)
			}
			if got := pass.EncodePublicKey(pk); got != want {
				t.Errorf("service %s: WAITROOM_PUBLIC_KEY = %s, want %s, the public half of WAITROOM_SIGNING_KEY", name, got, want)
			}
		}
	}
}

// TestComposeMemoryStated keeps deploy/README.md's figure the sum the compose file adds up to.
func TestComposeMemoryStated(t *testing.T) {
	w := loadWorkspace(t)
	p, err := LoadCompose(context.Background(), w.Root, "docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	total, _ := ComposeMemory(p)
	readme, err := os.ReadFile(filepath.Join(w.Root, "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("**%d MiB**", total>>20); !strings.Contains(string(readme), want) {
		t.Errorf("deploy/README.md does not state the memory limits' sum %s: update it", want)
	}
	if total > MemoryBudget || total < MemoryBudget/4 {
		t.Errorf("ComposeMemory = %d MiB, want within the budget of %d MiB (and not implausibly low)", total>>20, MemoryBudget>>20)
	}
}

// TestComposeK6Script runs the k6 service's command as its container does, with a k6 that
// prints its arguments: `docker compose run -e K6_SCRIPT=flash-sale.js k6` runs that script,
// and without -e the default one. Compose expands ${K6_SCRIPT} when it reads the file, before
// `run -e` has set anything: only a command that reads it in the container sees -e.
func TestComposeK6Script(t *testing.T) {
	w := loadWorkspace(t)
	p, err := LoadCompose(context.Background(), w.Root, "docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	k6, ok := p.Services["k6"]
	if !ok {
		t.Fatal("no k6 service")
	}
	scripts := ""
	for _, v := range k6.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == "/scripts" {
			scripts = v.Source
		}
	}
	if scripts == "" {
		t.Fatal("service k6 mounts no scripts at /scripts")
	}
	argv := slices.Concat([]string(k6.Entrypoint), []string(k6.Command))
	if len(k6.Entrypoint) == 0 {
		argv = slices.Concat([]string{"k6"}, []string(k6.Command)) // grafana/k6's ENTRYPOINT
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "k6"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if argv[0] == "k6" {
		argv[0] = filepath.Join(bin, "k6")
	}

	tests := []struct{ name, set, want string }{
		{"default", "", "rate-limiter.js"},
		{"run -e K6_SCRIPT=flash-sale.js", "flash-sale.js", "flash-sale.js"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
			for name, v := range k6.Environment {
				if v != nil && !(name == "K6_SCRIPT" && tt.set != "") {
					env = append(env, name+"="+*v)
				}
			}
			if tt.set != "" {
				env = append(env, "K6_SCRIPT="+tt.set)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%q: %v\n%s", argv, err, out)
			}
			if got, want := strings.Fields(string(out)), []string{"run", "/scripts/" + tt.want}; !slices.Equal(got, want) {
				t.Errorf("the k6 container runs k6 %q, want %q", got, want)
			}
			if _, err := os.Stat(filepath.Join(scripts, tt.want)); err != nil {
				t.Errorf("the script it runs is not in the mounted directory: %v", err)
			}
		})
	}
}
