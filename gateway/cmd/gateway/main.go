// Command gateway runs BoxOffice's gateway as its own process.
package main

import (
	"os"

	"boxoffice.dev/gateway"
	"boxoffice.dev/platform/server"
)

func main() {
	gateway.TuneGC(os.Getenv)
	server.Exec(gateway.Run)
}
