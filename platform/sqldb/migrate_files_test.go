package sqldb

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		dialect Dialect
		want    []string // files in order
		wantErr string
	}{
		{name: "numeric order, not lexical", dialect: SQLite,
			fsys: fstest.MapFS{"10_c.sql": file(""), "2_b.sql": file(""), "001_a.sql": file(""), "README.md": file("")},
			want: []string{"001_a.sql", "2_b.sql", "10_c.sql"}},
		{name: "per-dialect files for sqlite", dialect: SQLite,
			fsys: fstest.MapFS{"001_a.sql": file(""), "002_b.sqlite.sql": file(""), "002_b.postgres.sql": file("")},
			want: []string{"001_a.sql", "002_b.sqlite.sql"}},
		{name: "per-dialect files for postgres", dialect: Postgres,
			fsys: fstest.MapFS{"001_a.sql": file(""), "002_b.sqlite.sql": file(""), "002_b.postgres.sql": file("")},
			want: []string{"001_a.sql", "002_b.postgres.sql"}},
		{name: "one dialect missing", dialect: SQLite,
			fsys:    fstest.MapFS{"002_b.postgres.sql": file("")},
			wantErr: "needs both"},
		{name: "shared beside per-dialect", dialect: SQLite,
			fsys:    fstest.MapFS{"002_b.sql": file(""), "002_b.sqlite.sql": file(""), "002_b.postgres.sql": file("")},
			wantErr: "one or the other"},
		{name: "same version twice", dialect: SQLite,
			fsys:    fstest.MapFS{"002_b.sql": file(""), "002_c.sql": file("")},
			wantErr: "two names"},
		{name: "badly named", dialect: SQLite,
			fsys:    fstest.MapFS{"init.sql": file("")},
			wantErr: "init.sql: want NNN_name.sql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readMigrations(tt.fsys, tt.dialect)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("readMigrations() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("readMigrations(): %v", err)
			}
			var files []string
			for _, m := range got {
				files = append(files, m.file)
			}
			if strings.Join(files, " ") != strings.Join(tt.want, " ") {
				t.Errorf("readMigrations() = %v, want %v", files, tt.want)
			}
		})
	}
}
