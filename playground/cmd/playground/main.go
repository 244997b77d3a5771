// Command playground runs BoxOffice's playground as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/playground"
)

func main() { server.Exec(playground.Run) }
