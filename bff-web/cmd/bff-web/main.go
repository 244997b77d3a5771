// Command bff-web runs BoxOffice's bff-web as its own process.
package main

import (
	bffweb "boxoffice.dev/bff-web"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(bffweb.Run) }
