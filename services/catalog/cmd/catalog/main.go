// Command catalog runs BoxOffice's catalog as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/catalog"
)

func main() { server.Exec(catalog.Run) }
