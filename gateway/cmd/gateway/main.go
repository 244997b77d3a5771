// Command gateway runs BoxOffice's gateway as its own process.
package main

import (
	"boxoffice.dev/gateway"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(gateway.Run) }
