// Command catalog runs BoxOffice's catalog as its own process.
package main

import (
	"boxoffice.dev/services/catalog"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(catalog.Run) }
