package deploycheck

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// TestPostgresInit runs deploy/compose/postgres-init.sh, as the postgres image does, against
// a real server: every database it is given is created and can be opened. The names are
// unique to the run, and need quoting as "order" does (a reserved word in SQL).
func TestPostgresInit(t *testing.T) {
	admin := os.Getenv(testkit.PostgresEnv)
	if admin == "" {
		testkit.Missing(t, "PostgreSQL ("+testkit.PostgresEnv+")")
	}
	psql := testkit.LookPath(t, "psql")
	w := loadWorkspace(t)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", testkit.PostgresEnv, err)
	}
	password, _ := u.User.Password()
	suffix := strings.ToLower(rand.Text()[:8])
	names := []string{"Deploy-Init-" + suffix + "-a", "Deploy-Init-" + suffix + "-b"}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adminDB, err := sqldb.Open(ctx, sqldb.Options{URL: admin})
	if err != nil {
		t.Fatalf("open %s: %v", testkit.PostgresEnv, err)
	}
	t.Cleanup(func() {
		for _, n := range names {
			adminDB.ExecContext(context.Background(), fmt.Sprintf("DROP DATABASE IF EXISTS %q", n))
		}
		adminDB.Close()
	})

	cmd := exec.CommandContext(ctx, "sh", filepath.Join(w.Root, "deploy", "compose", "postgres-init.sh"))
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(psql)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"POSTGRES_USER="+u.User.Username(), "PGPASSWORD="+password,
		"PGHOST="+u.Hostname(), "PGPORT="+u.Port(),
		"BOXOFFICE_DATABASES="+strings.Join(names, " "))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("postgres-init.sh: %v\n%s", err, out)
	}
	for _, n := range names {
		dbURL := *u
		dbURL.Path = "/" + n
		db, err := sqldb.Open(ctx, sqldb.Options{URL: dbURL.String()})
		if err != nil {
			t.Errorf("after postgres-init.sh, open database %q: %v", n, err)
			continue
		}
		db.Close()
	}
}
