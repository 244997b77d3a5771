// Command waitroom runs BoxOffice's waitroom as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/waitroom"
)

func main() { server.Exec(waitroom.Run) }
