// Command bff-mobile runs BoxOffice's bff-mobile as its own process.
package main

import (
	bffmobile "boxoffice.dev/bff-mobile"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(bffmobile.Run) }
