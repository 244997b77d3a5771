// Command auth runs BoxOffice's auth as its own process.
package main

import (
	"boxoffice.dev/platform/server"
	"boxoffice.dev/services/auth"
)

func main() { server.Exec(auth.Run) }
