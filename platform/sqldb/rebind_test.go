package sqldb

import "testing"

func TestRebind(t *testing.T) {
	tests := []struct {
		name    string
		dialect Dialect
		in      string
		want    string
	}{
		{name: "sqlite unchanged", dialect: SQLite,
			in: "SELECT * FROM t WHERE a = ? AND b = ?", want: "SELECT * FROM t WHERE a = ? AND b = ?"},
		{name: "postgres numbered", dialect: Postgres,
			in: "SELECT * FROM t WHERE a = ? AND b = ?", want: "SELECT * FROM t WHERE a = $1 AND b = $2"},
		{name: "no placeholders", dialect: Postgres, in: "SELECT 1", want: "SELECT 1"},
		{name: "inside a string", dialect: Postgres,
			in: "SELECT '?', ? FROM t", want: "SELECT '?', $1 FROM t"},
		{name: "doubled quote in a string", dialect: Postgres,
			in: "SELECT 'it''s ?', ?", want: "SELECT 'it''s ?', $1"},
		{name: "quoted identifier", dialect: Postgres,
			in: `SELECT "odd?col" FROM t WHERE x = ?`, want: `SELECT "odd?col" FROM t WHERE x = $1`},
		{name: "line comment", dialect: Postgres,
			in: "SELECT ? -- why?\nFROM t WHERE y = ?", want: "SELECT $1 -- why?\nFROM t WHERE y = $2"},
		{name: "ten and more", dialect: Postgres,
			in:   "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
			want: "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &DB{Dialect: tt.dialect}
			if got := db.Rebind(tt.in); got != tt.want {
				t.Errorf("Rebind(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
