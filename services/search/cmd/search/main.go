// Command search runs BoxOffice's search as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/search"
)

func main() { server.Exec(search.Run) }
