package catalog

import (
	"embed"
	"io/fs"

	"boxoffice.dev/platform/sqldb"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the catalog's schema, for server.OpenDB.
func Migrations() fs.FS { return sqldb.Dir(migrationFiles, "migrations") }
