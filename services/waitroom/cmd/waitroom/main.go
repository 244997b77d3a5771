// Command waitroom runs BoxOffice's waitroom as its own process.
package main

import (
	"boxoffice.dev/services/waitroom"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(waitroom.Run) }
