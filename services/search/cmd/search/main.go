// Command search runs BoxOffice's search as its own process.
package main

import (
	"boxoffice.dev/services/search"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(search.Run) }
