// Command playground runs BoxOffice's playground as its own process.
package main

import (
	"boxoffice.dev/playground"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(playground.Run) }
