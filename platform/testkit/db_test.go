package testkit

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"boxoffice.dev/platform/sqldb"
)

func TestOpenDBs(t *testing.T) {
	admin := os.Getenv(PostgresEnv)
	var names []string
	t.Run("open", func(t *testing.T) {
		dbs := OpenDBs(t, "Order-Service")
		if dbs[0].Dialect != sqldb.SQLite {
			t.Errorf("OpenDBs()[0].Dialect = %s, want sqlite first", dbs[0].Dialect)
		}
		wantLen := 1
		if admin != "" {
			wantLen = 2
		}
		if len(dbs) != wantLen {
			t.Fatalf("len(OpenDBs()) = %d with %s=%q, want %d", len(dbs), PostgresEnv, admin, wantLen)
		}
		if admin == "" {
			return
		}
		// Two calls, two databases: tests never share rows.
		for _, db := range []*sqldb.DB{dbs[1], OpenDBs(t, "Order-Service")[1]} {
			var name string
			if err := db.QueryRowContext(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
				t.Fatalf("current_database: %v", err)
			}
			names = append(names, name)
		}
		if names[0] == names[1] {
			t.Errorf("two OpenDBs calls share database %s, want one each", names[0])
		}
	})
	if admin == "" {
		return
	}
	conn, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open admin: %v", err)
	}
	defer conn.Close()
	for _, name := range names {
		var n int
		if err := conn.QueryRow(`SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
			t.Fatalf("look up %s: %v", name, err)
		}
		if n != 0 {
			t.Errorf("database %s still exists after its test ended, want it dropped", name)
		}
	}
}

func TestTestDBName(t *testing.T) {
	tests := []struct {
		service string
		prefix  string
	}{
		{service: "order", prefix: "test_order_"},
		{service: "Bff-Web.v2", prefix: "test_bff_web_v2_"},
		{service: "a-very-long-service-name-that-goes-on-and-on", prefix: "test_a_very_long_service_name_that_go_"},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			got := testDBName(tt.service)
			if len(got) > 63 || len(got) != len(tt.prefix)+12 || got[:len(tt.prefix)] != tt.prefix {
				t.Errorf("testDBName(%q) = %q, want %q + 12 hex digits, at most 63 bytes", tt.service, got, tt.prefix)
			}
		})
	}
}
